import { describe, expect, it } from 'vitest';
import {
  OFFLINE_MESSAGE_MAGIC,
  bedrockAdvertisementToResult,
  decodeUnconnectedPong,
  encodeUnconnectedPing,
  parseServerId,
  splitServerId,
} from '../../src/protocol/bedrock.js';
import { fixture, hex, codeOf } from './fixtures.js';
import { BEDROCK_SERVER_CONFIG } from './servers.js';

function pong(serverId: string, options: { id?: number; magic?: Buffer; time?: bigint } = {}): Buffer {
  const text = Buffer.from(serverId, 'utf8');
  const out = Buffer.alloc(35 + text.length);
  out[0] = options.id ?? 0x1c;
  out.writeBigInt64BE(options.time ?? 7n, 1);
  out.writeBigInt64BE(99n, 9);
  (options.magic ?? OFFLINE_MESSAGE_MAGIC).copy(out, 17);
  out.writeUInt16BE(text.length, 33);
  text.copy(out, 35);
  return out;
}

describe('encodeUnconnectedPing', () => {
  it('writes 0x01, the time, the offline-message magic and the client GUID', () => {
    expect(encodeUnconnectedPing(0xabcdn, 0x0102030405060708n)).toEqual(
      hex('01 000000000000abcd 00ffff00fefefefefdfdfdfd12345678 0102030405060708'),
    );
    expect(encodeUnconnectedPing(1n, -1n).subarray(25).toString('hex')).toBe('ffffffffffffffff');
  });
});

describe('decodeUnconnectedPong on bytes captured from bedrock-protocol 3.59.0', () => {
  const captured = fixture('bedrock-pong.hex');

  it('checks the packet and returns the echoed time, the server GUID and the server ID', () => {
    const decoded = decodeUnconnectedPong(captured);
    expect(decoded.time).toBe(0xabcdn);
    expect(decoded.serverId.startsWith('MCPE;')).toBe(true);
  });

  it('parses every advertised field, unescaping \\; in the MOTD', () => {
    const ad = parseServerId(decodeUnconnectedPong(captured).serverId);
    expect(ad).toEqual({
      edition: 'MCPE',
      motd: '§aObserver; Bedrock',
      protocol: 2169,
      version: '1.26.45',
      online: 0,
      max: BEDROCK_SERVER_CONFIG.maxPlayers,
      serverGuid: BEDROCK_SERVER_CONFIG.serverId,
      levelName: BEDROCK_SERVER_CONFIG.levelName,
      gameMode: BEDROCK_SERVER_CONFIG.gamemode,
      gameModeId: BEDROCK_SERVER_CONFIG.gamemodeId,
      portIPv4: 51954, // the port the server had when the fixture was captured
      portIPv6: 51954,
    });
    const result = bedrockAdvertisementToResult(ad);
    expect(result.motd.raw_lines).toEqual(['§aObserver; Bedrock', 'Observer Level']);
    expect(result.motd.clean).toBe('Observer; Bedrock\nObserver Level');
    expect(result.version).toEqual({ name: '1.26.45', protocol: 2169 });
    expect(result.players).toEqual({ online: 0, max: 24, sample: [] });
    expect(result.extra).toEqual({
      edition: 'MCPE',
      serverGuid: '13253860892328930865',
      levelName: 'Observer Level',
      gameMode: 'Survival',
      gameModeId: 0,
      portIPv4: 51954,
      portIPv6: 51954,
    });
  });
});

describe('Bedrock server IDs, hand-made', () => {
  it('splits on ; but not on \\;', () => {
    expect(splitServerId('MCPE;a\\;b;c\\d;')).toEqual(['MCPE', 'a;b', 'c\\d']);
    expect(splitServerId('MCPE;;x')).toEqual(['MCPE', '', 'x']);
  });

  it('accepts the six-field form of older servers', () => {
    const ad = parseServerId('MCPE;Old server;113;1.2.0;1;10');
    expect(ad.levelName).toBeNull();
    expect(ad.portIPv4).toBeNull();
    expect(bedrockAdvertisementToResult(ad, 5n).extra).toEqual({ edition: 'MCPE', serverGuid: '5' });
  });

  it('drops optional fields that are not what they claim', () => {
    const ad = parseServerId('MCEE;m;1;v;1;2;guid;;Creative\u0000;x;70000;-1;');
    expect(ad.edition).toBe('MCEE');
    expect(ad.serverGuid).toBeNull();
    expect(ad.levelName).toBeNull();
    expect(ad.gameMode).toBe('Creative');
    expect(ad.gameModeId).toBeNull();
    expect(ad.portIPv4).toBeNull();
    expect(ad.portIPv6).toBeNull();
  });

  it.each([
    ['wrong magic', () => decodeUnconnectedPong(pong('MCPE;a;1;v;1;2', { magic: Buffer.alloc(16) }))],
    ['wrong packet id', () => decodeUnconnectedPong(pong('MCPE;a;1;v;1;2', { id: 0x1d }))],
    ['a header cut short', () => decodeUnconnectedPong(pong('MCPE;a;1;v;1;2').subarray(0, 30))],
    ['a string cut short', () => decodeUnconnectedPong(pong('MCPE;a;1;v;1;2').subarray(0, 40))],
    ['too few fields', () => parseServerId('MCPE;a;1;v')],
    ['a non-numeric protocol', () => parseServerId('MCPE;a;x;v;1;2')],
    ['non-numeric player counts', () => parseServerId('MCPE;a;1;v;one;2')],
    ['an empty edition', () => parseServerId(';a;1;v;1;2')],
  ])('refuses %s', (_name, fn) => {
    expect(codeOf(fn)).toBe('invalid_response');
  });
});
