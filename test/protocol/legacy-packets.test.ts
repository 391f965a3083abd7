import { describe, expect, it } from 'vitest';
import {
  LEGACY_PROTOCOL_VERSION,
  decodeLegacyKick,
  encodeLegacyPing,
  legacyStatusToResult,
  parseLegacyKickText,
  readLegacyKick,
} from '../../src/protocol/legacy.js';
import { fixture, hex, codeOf } from './fixtures.js';
import { JAVA_SERVER_CONFIG } from './servers.js';

function kick(text: string): Buffer {
  const body = Buffer.from(text, 'utf16le').swap16();
  const header = Buffer.alloc(3);
  header[0] = 0xff;
  header.writeUInt16BE(text.length, 1);
  return Buffer.concat([header, body]);
}

describe('encodeLegacyPing', () => {
  it('writes the 1.6 request byte for byte (the wiki example for localhost:25565)', () => {
    expect(LEGACY_PROTOCOL_VERSION).toBe(0x4a);
    expect(encodeLegacyPing('localhost', 25565)).toEqual(
      hex(`fe 01 fa
           000b 004d0043007c00500069006e00670048006f00730074
           0019 4a
           0009 006c006f00630061006c0068006f00730074
           000063dd`),
    );
  });

  it('counts the host in UTF-16 units and writes the port as an Int', () => {
    const bytes = encodeLegacyPing('ü.de', 19132, 78);
    expect(bytes.subarray(27, 27 + 2).toString('hex')).toBe('000f'); // 7 + 2 × 4
    expect(bytes[29]).toBe(78);
    expect(bytes.subarray(30).toString('hex')).toBe('0004' + '00fc002e00640065' + '00004abc');
  });
});

describe('decodeLegacyKick on bytes captured from minecraft-protocol 1.54.0', () => {
  it('parses the §1 reply to the 1.6 request', () => {
    const status = decodeLegacyKick(fixture('legacy-1.6-reply.hex'));
    expect(status).toEqual({
      protocol: 767,
      version: '1.21.1',
      motd: JAVA_SERVER_CONFIG.motd,
      online: 0,
      max: JAVA_SERVER_CONFIG.maxPlayers,
    });
    const result = legacyStatusToResult(status);
    expect(result.version).toEqual({ name: '1.21.1', protocol: 767 });
    expect(result.motd.raw).toBe('§aObserver §ltest§r server');
    expect(result.motd.clean).toBe('Observer test server');
    expect(result.players).toEqual({ online: 0, max: 42, sample: [] });
    expect(result.favicon).toBeNull();
  });

  it('parses the pre-1.4 reply, splitting from the right because the MOTD holds §', () => {
    const status = decodeLegacyKick(fixture('legacy-pre1.4-reply.hex'));
    expect(status).toEqual({ protocol: null, version: null, motd: JAVA_SERVER_CONFIG.motd, online: 0, max: 42 });
    expect(legacyStatusToResult(status).version).toBeNull();
  });
});

describe('legacy replies, hand-made', () => {
  it('handles an empty MOTD and large counts', () => {
    expect(parseLegacyKickText('§0§5')).toEqual({ protocol: null, version: null, motd: '', online: 0, max: 5 });
    expect(parseLegacyKickText('§1\u000078\u00001.6.4\u0000A §cred§r motd\u000012\u000020')).toEqual({
      protocol: 78,
      version: '1.6.4',
      motd: 'A §cred§r motd',
      online: 12,
      max: 20,
    });
  });

  it('waits for the whole packet, then decodes it', () => {
    const bytes = kick('a§1§2');
    expect(readLegacyKick(bytes.subarray(0, 1))).toBe(3);
    expect(readLegacyKick(bytes.subarray(0, 5))).toBe(bytes.length);
    expect(readLegacyKick(bytes)).toEqual({ value: 'a§1§2', consumed: bytes.length });
  });

  it.each([
    ['a packet that is not a kick', Buffer.from('HTTP/1.1 400 Bad Request')],
    ['a modern status frame', hex('ed0300ea037b')],
    ['a reply without counts', kick('just a kick message')],
    ['non-numeric counts', kick('motd§x§y')],
    ['a §1 reply with missing fields', kick('§1\u000078\u00001.6.4\u0000motd')],
    ['a §1 reply with a bad protocol', kick('§1\u0000abc\u00001.6.4\u0000motd\u00001\u00002')],
  ])('refuses %s', (_name, bytes) => {
    expect(codeOf(() => decodeLegacyKick(bytes))).toBe('invalid_response');
  });

  it('reports a reply cut short as invalid', () => {
    expect(codeOf(() => decodeLegacyKick(kick('a§1§2').subarray(0, 6)))).toBe('invalid_response');
  });
});
