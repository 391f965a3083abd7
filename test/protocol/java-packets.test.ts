import { describe, expect, it } from 'vitest';
import { acceptFavicon } from '../../src/protocol/favicon.js';
import {
  STATUS_PROTOCOL_VERSION,
  decodePong,
  decodeStatusResponse,
  encodeHandshake,
  encodePingRequest,
  encodeStatusRequest,
  parseJavaStatus,
  readStatusResponse,
} from '../../src/protocol/java.js';
import { fixture, hex, codeOf } from './fixtures.js';
import { PNG_DATA_URL } from './servers.js';

function statusFrame(json: string): Buffer {
  const text = Buffer.from(json, 'utf8');
  const body = Buffer.concat([Buffer.from([0x00]), lengthPrefix(text.length), text]);
  return Buffer.concat([lengthPrefix(body.length), body]);
}

function lengthPrefix(n: number): Buffer {
  const out: number[] = [];
  let v = n >>> 0;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return Buffer.from(out);
}

describe('Java encoders', () => {
  it('writes the handshake: length, 0x00, protocol -1, host, port, next state 1', () => {
    expect(STATUS_PROTOCOL_VERSION).toBe(-1);
    expect(encodeHandshake('localhost', 25565).toString('hex')).toBe(
      '13' + '00' + 'ffffffff0f' + '09' + Buffer.from('localhost').toString('hex') + '63dd' + '01',
    );
  });

  it('writes another protocol number and a UTF-8 host when asked', () => {
    expect(encodeHandshake('é.example', 1, 767).toString('hex')).toBe(
      '11' + '00' + 'ff05' + '0a' + Buffer.from('é.example').toString('hex') + '0001' + '01',
    );
  });

  it('refuses a host name longer than the protocol allows', () => {
    expect(() => encodeHandshake('a'.repeat(256), 25565)).toThrow(RangeError);
  });

  it('writes the status request and the ping request', () => {
    expect(encodeStatusRequest().toString('hex')).toBe('0100');
    expect(encodePingRequest(0x0102030405060708n).toString('hex')).toBe('09010102030405060708');
    expect(encodePingRequest(-1n).toString('hex')).toBe('0901ffffffffffffffff');
  });
});

describe('Java decoders on bytes captured from minecraft-protocol 1.54.0', () => {
  const captured = fixture('java-status-response.hex');

  it('decodes the status response and ignores the frame after it', () => {
    const json = decodeStatusResponse(captured);
    expect(json.version).toEqual({ name: '1.21.1', protocol: 767 });
    expect(json.enforcesSecureChat).toBe(true);
  });

  it('parses every field the server was configured to send', () => {
    const result = parseJavaStatus(decodeStatusResponse(captured));
    expect(result.version).toEqual({ name: '1.21.1', protocol: 767 });
    expect(result.players).toEqual({
      online: 3,
      max: 42,
      sample: [
        { name: 'Alice', id: '4566e69f-c907-48ee-8d71-d7ba5aa00d20' },
        { name: 'Bob', id: '00000000-0000-0000-0000-000000000002' },
      ],
    });
    expect(result.motd.clean).toBe('Hello World\nsecond line');
    // #ff8800 has no § code: raw keeps the nearest named colour (gold), html the exact one.
    expect(result.motd.raw).toBe('§6Hello §lWorld§6\n§bsecond line');
    expect(result.motd.raw_lines).toEqual(['§6Hello §lWorld§6', '§bsecond line']);
    expect(result.motd.clean_lines).toEqual(['Hello World', 'second line']);
    expect(result.motd.html).toBe(
      '<span style="color: #ffaa00">Hello </span>' +
        '<span style="color: #ff8800; font-weight: bold">World</span>' +
        '<span style="color: #ffaa00">\n</span>' +
        '<span style="color: #55ffff">second line</span>',
    );
    expect(result.favicon).toBe(PNG_DATA_URL);
    expect(result.extra).toEqual({ enforcesSecureChat: true });
  });

  it('decodes the pong that follows', () => {
    // The status frame: 2-byte length VarInt (ed03 = 493) + 493 bytes.
    expect(decodePong(captured.subarray(495))).toBe(0x0102030405060708n);
  });

  it('asks for the rest when the capture is cut, then decodes it whole', () => {
    expect(readStatusResponse(captured.subarray(0, 100))).toBe(495);
    expect(codeOf(() => decodeStatusResponse(captured.subarray(0, 100)))).toBe('invalid_response');
  });
});

describe('Java decoders on hostile bytes', () => {
  it('refuses invalid JSON and JSON that is not an object', () => {
    expect(codeOf(() => decodeStatusResponse(statusFrame('{"version":')))).toBe('invalid_response');
    expect(codeOf(() => decodeStatusResponse(statusFrame('[1,2,3]')))).toBe('invalid_response');
    expect(codeOf(() => decodeStatusResponse(statusFrame('"text"')))).toBe('invalid_response');
    expect(codeOf(() => decodeStatusResponse(statusFrame('null')))).toBe('invalid_response');
  });

  it('refuses a packet that is not 0x00 as soon as its first byte arrives', () => {
    // "HTTP/1.1 400": 'H' (72) reads as a length, 'T' (0x54) as the packet ID.
    expect(codeOf(() => readStatusResponse(Buffer.from('HTTP/1.1 400 Bad Request')))).toBe('invalid_response');
  });

  it('refuses a JSON string whose length runs past the packet', () => {
    expect(codeOf(() => decodeStatusResponse(hex('03 00 7f 7b')))).toBe('invalid_response');
  });

  it('keeps the status and parses a 10,000-deep extra chain into a capped MOTD', () => {
    const depth = 10_000;
    const json = '{"description":' + '{"text":"a","extra":['.repeat(depth) + '"z"' + ']}'.repeat(depth) + '}';
    const result = parseJavaStatus(decodeStatusResponse(statusFrame(json)));
    // Levels 0..32 each contribute "a"; deeper levels are dropped.
    expect(result.motd.clean).toBe('a'.repeat(33));
  });
});

describe('parseJavaStatus', () => {
  it('cleans version and player names and caps the sample', () => {
    const sample = Array.from({ length: 500 }, (_, i) => ({ name: `§aP${i}\u0000`, id: `id${i}` }));
    const result = parseJavaStatus({
      version: { name: '§cPaper\n1.21', protocol: 767 },
      players: { online: 5.7, max: -3, sample: [...sample, 'bad', { id: 'no name' }] },
    });
    expect(result.version).toEqual({ name: 'Paper 1.21', protocol: 767 });
    expect(result.players?.online).toBe(5);
    expect(result.players?.max).toBe(0);
    expect(result.players?.sample).toHaveLength(100);
    expect(result.players?.sample[0]).toEqual({ name: 'P0', id: 'id0' });
  });

  it('gives null version and players when the server leaves them out or sends nonsense', () => {
    const result = parseJavaStatus({ version: 'x', players: { online: 'many', max: 10 } });
    expect(result.version).toBeNull();
    expect(result.players).toBeNull();
    expect(result.motd.raw).toBe('');
    expect(result.favicon).toBeNull();
    expect(parseJavaStatus({ version: { name: 'x' } }).version).toEqual({ name: 'x', protocol: -1 });
  });

  it('keeps the chat flags only as booleans', () => {
    const result = parseJavaStatus({ enforcesSecureChat: false, previewsChat: true, preventsChatReports: 'yes' });
    expect(result.extra).toEqual({ enforcesSecureChat: false, previewsChat: true });
  });

  it('accepts a description given as a § string', () => {
    expect(parseJavaStatus({ description: '§aGreen §lbold' }).motd.raw).toBe('§aGreen §lbold');
  });
});

describe('acceptFavicon', () => {
  const png = PNG_DATA_URL.slice('data:image/png;base64,'.length);

  it.each([
    ['a PNG data URL', PNG_DATA_URL, PNG_DATA_URL],
    ['line breaks inside the base64 (older servers)', `data:image/png;base64,${png.slice(0, 20)}\n${png.slice(20)}`, PNG_DATA_URL],
    ['a JPEG data URL', 'data:image/jpeg;base64,' + png, null],
    ['an http URL', 'http://example.com/icon.png', null],
    ['invalid base64', 'data:image/png;base64,!!!!', null],
    ['base64 of something that is not a PNG', 'data:image/png;base64,' + Buffer.from('GIF89a-not-a-png').toString('base64'), null],
    ['a quote and markup', 'data:image/png;base64,"><script>', null],
    ['an empty payload', 'data:image/png;base64,', null],
    ['an oversized payload', 'data:image/png;base64,' + png + 'A'.repeat(600_000 - (png.length % 4)), null],
    ['a non-string', 42, null],
  ])('%s', (_name, input, expected) => {
    expect(acceptFavicon(input)).toBe(expected);
  });
});
