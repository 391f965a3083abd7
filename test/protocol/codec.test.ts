import { describe, expect, it } from 'vitest';
import {
  ByteReader,
  MAX_RESPONSE_BYTES,
  decodeFrame,
  decodeUtf16BE,
  encodeString,
  encodeUtf16BE,
  encodeVarInt,
  peekVarInt,
} from '../../src/protocol/codec.js';
import { hex, codeOf } from './fixtures.js';

// Examples from the protocol wiki's VarInt table (Java Edition protocol, Data types).
const VARINTS: [number, string][] = [
  [0, '00'],
  [1, '01'],
  [2, '02'],
  [127, '7f'],
  [128, '8001'],
  [255, 'ff01'],
  [25565, 'ddc701'],
  [2097151, 'ffff7f'],
  [2147483647, 'ffffffff07'],
  [-1, 'ffffffff0f'],
  [-2147483648, '8080808008'],
];

describe('VarInt', () => {
  it.each(VARINTS)('%i encodes as %s and decodes back', (value, bytes) => {
    expect(encodeVarInt(value).toString('hex')).toBe(bytes);
    expect(peekVarInt(hex(bytes))).toEqual({ value, size: bytes.length / 2 });
    expect(new ByteReader(hex(bytes)).readVarInt()).toBe(value);
  });

  it('asks for more bytes while the VarInt is incomplete', () => {
    expect(peekVarInt(hex('80'))).toBeUndefined();
    expect(peekVarInt(hex('ffffffff'))).toBeUndefined();
  });

  it('refuses a sixth byte (a VarInt is at most 5 bytes)', () => {
    expect(codeOf(() => peekVarInt(hex('ffffffffff01')))).toBe('invalid_response');
    expect(codeOf(() => peekVarInt(hex('8080808080')))).toBe('invalid_response');
  });

  it('reports a VarInt cut by the end of a packet as invalid', () => {
    expect(codeOf(() => new ByteReader(hex('80')).readVarInt())).toBe('invalid_response');
  });
});

describe('ByteReader', () => {
  it('reads strings as UTF-8 after checking the length', () => {
    const bytes = encodeString('héllo §a');
    expect(bytes.toString('hex')).toBe('0a68c3a96c6c6f20c2a761');
    expect(new ByteReader(bytes).readString(100)).toBe('héllo §a');
  });

  it('refuses a string longer than what remains', () => {
    expect(codeOf(() => new ByteReader(hex('0561626364')).readString(100))).toBe('invalid_response');
  });

  it('refuses a negative string length', () => {
    expect(codeOf(() => new ByteReader(hex('ffffffff0f61')).readString(100))).toBe('invalid_response');
  });

  it('refuses a string over the cap before reading it', () => {
    // Declares 2 GiB − 1 bytes with 1 byte present: rejected on the prefix alone.
    expect(codeOf(() => new ByteReader(hex('ffffffff0761')).readString(1000))).toBe('response_too_large');
  });

  it('reads fixed-size fields and refuses to run past the end', () => {
    const reader = new ByteReader(hex('01 63dd 0000000000000102'));
    expect(reader.readBoolean()).toBe(true);
    expect(reader.readUInt16BE()).toBe(25565);
    expect(reader.readBigInt64BE()).toBe(258n);
    expect(reader.remaining).toBe(0);
    expect(codeOf(() => reader.readUInt8())).toBe('invalid_response');
    expect(codeOf(() => new ByteReader(hex('0102')).readBytes(-1))).toBe('invalid_response');
  });
});

describe('UTF-16BE', () => {
  it('round-trips, including § and surrogate pairs', () => {
    expect(encodeUtf16BE('§1').toString('hex')).toBe('00a70031');
    expect(decodeUtf16BE(encodeUtf16BE('a§😀'))).toBe('a§😀');
  });

  it('refuses an odd byte count', () => {
    expect(codeOf(() => decodeUtf16BE(hex('00a700')))).toBe('invalid_response');
  });
});

describe('decodeFrame', () => {
  it('returns the body of a complete frame and what it consumed', () => {
    const result = decodeFrame(hex('03 000102 ff'), MAX_RESPONSE_BYTES);
    expect(result).toEqual({ value: hex('000102'), consumed: 4 });
  });

  it('says how many bytes it needs once the length is known', () => {
    expect(decodeFrame(hex('05 0001'), MAX_RESPONSE_BYTES)).toBe(6);
    expect(decodeFrame(hex(''), MAX_RESPONSE_BYTES)).toBeUndefined();
  });

  it('refuses zero, negative and over-cap lengths before waiting for the body', () => {
    expect(codeOf(() => decodeFrame(hex('00'), 100))).toBe('invalid_response');
    expect(codeOf(() => decodeFrame(hex('ffffffff0f'), 100))).toBe('invalid_response');
    // 2^31 as a VarInt is negative as an int32.
    expect(codeOf(() => decodeFrame(hex('8080808008'), 100))).toBe('invalid_response');
    // 2 GiB − 1: a plausible sign, an impossible size.
    expect(codeOf(() => decodeFrame(hex('ffffffff07'), MAX_RESPONSE_BYTES))).toBe('response_too_large');
    expect(codeOf(() => decodeFrame(hex('65'), 100))).toBe('response_too_large');
  });
});
