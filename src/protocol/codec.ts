/**
 * Bounded binary codec shared by the Minecraft protocol clients.
 *
 * Every byte read here comes from a remote server and is treated as hostile: VarInts stop at
 * 5 bytes, every length prefix is checked against the bytes that remain and against a cap
 * before anything is allocated, and strings are decoded as UTF-8 under a cap.
 *
 * Data types: https://minecraft.wiki/w/Java_Edition_protocol/Data_types (VarInt, String,
 * Unsigned Short, Long) — formerly wiki.vg "Data types".
 */
import { ProbeError } from '../core/errors.js';

/** Total bytes one probe may receive from a server, whatever the protocol (mcutil uses the same). */
export const MAX_RESPONSE_BYTES = 1024 * 1024;

/** A VarInt encodes a 32-bit integer in at most 5 bytes (7 bits per byte). */
export const MAX_VARINT_BYTES = 5;

/** Thrown (as ProbeError) when a server's bytes cannot be what the protocol says. */
export function invalid(reason: string): ProbeError {
  return new ProbeError('invalid_response', { cause: new Error(reason) });
}

export function tooLarge(reason: string): ProbeError {
  return new ProbeError('response_too_large', { cause: new Error(reason) });
}

/** Number of bytes `value` takes as a VarInt (negative int32 values always take 5). */
export function varIntSize(value: number): number {
  let v = value >>> 0;
  let size = 1;
  while (v >= 0x80) {
    v >>>= 7;
    size += 1;
  }
  return size;
}

/** Writes `value` (an int32; negatives in two's complement) as a VarInt at `offset`; returns the new offset. */
export function writeVarInt(target: Uint8Array, value: number, offset: number): number {
  let v = value >>> 0;
  let at = offset;
  while (v >= 0x80) {
    target[at++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  target[at++] = v;
  return at;
}

export function encodeVarInt(value: number): Buffer {
  const out = Buffer.allocUnsafe(varIntSize(value));
  writeVarInt(out, value, 0);
  return out;
}

export interface VarIntRead {
  value: number;
  size: number;
}

/**
 * Reads a VarInt from a buffer that may still be incomplete (a TCP stream).
 * Returns undefined when more bytes are needed; throws `invalid_response` as soon as a
 * fifth byte still has its continuation bit set (a 6-byte VarInt cannot be an int32).
 */
export function peekVarInt(source: Uint8Array, offset = 0): VarIntRead | undefined {
  let value = 0;
  for (let i = 0; i < MAX_VARINT_BYTES; i++) {
    const at = offset + i;
    if (at >= source.length) return undefined;
    const byte = source[at] as number;
    value |= (byte & 0x7f) << (7 * i);
    if ((byte & 0x80) === 0) return { value: value | 0, size: i + 1 };
  }
  throw invalid('VarInt longer than 5 bytes');
}

/**
 * A cursor over one complete packet. Reading past the end throws `invalid_response`
 * (the length prefix promised bytes the packet does not hold).
 */
export class ByteReader {
  private offset: number;

  constructor(
    private readonly bytes: Uint8Array,
    offset = 0,
  ) {
    this.offset = offset;
  }

  get remaining(): number {
    return this.bytes.length - this.offset;
  }

  get position(): number {
    return this.offset;
  }

  private need(count: number, what: string): void {
    if (count > this.remaining) throw invalid(`truncated ${what}`);
  }

  readVarInt(): number {
    const read = peekVarInt(this.bytes, this.offset);
    if (read === undefined) throw invalid('truncated VarInt');
    this.offset += read.size;
    return read.value;
  }

  readUInt8(): number {
    this.need(1, 'byte');
    return this.bytes[this.offset++] as number;
  }

  readBoolean(): boolean {
    return this.readUInt8() !== 0;
  }

  readUInt16BE(): number {
    this.need(2, 'unsigned short');
    const b = this.bytes;
    const v = ((b[this.offset] as number) << 8) | (b[this.offset + 1] as number);
    this.offset += 2;
    return v;
  }

  readBigInt64BE(): bigint {
    this.need(8, 'long');
    const view = new DataView(this.bytes.buffer, this.bytes.byteOffset + this.offset, 8);
    this.offset += 8;
    return view.getBigInt64(0, false);
  }

  /** A view (no copy) of the next `count` bytes. */
  readBytes(count: number): Uint8Array {
    if (!Number.isInteger(count) || count < 0) throw invalid('negative length');
    this.need(count, 'byte array');
    const out = this.bytes.subarray(this.offset, this.offset + count);
    this.offset += count;
    return out;
  }

  /**
   * A VarInt-prefixed UTF-8 string (protocol type String). The prefix is checked for sign,
   * against `maxBytes` and against what remains, before any decoding happens.
   */
  readString(maxBytes: number): string {
    const length = this.readVarInt();
    if (length < 0) throw invalid('negative string length');
    if (length > maxBytes) throw tooLarge(`string of ${length} bytes exceeds ${maxBytes}`);
    const bytes = this.readBytes(length);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('utf8');
  }
}

/** Protocol String: VarInt byte length, then UTF-8. */
export function encodeString(value: string): Buffer {
  const body = Buffer.from(value, 'utf8');
  return Buffer.concat([encodeVarInt(body.length), body]);
}

/** Big-endian UTF-16 (Java's `char` strings in the pre-1.7 protocol). Node has only LE. */
export function encodeUtf16BE(value: string): Buffer {
  const out = Buffer.from(value, 'utf16le');
  return out.swap16();
}

export function decodeUtf16BE(bytes: Uint8Array): string {
  if (bytes.length % 2 !== 0) throw invalid('odd UTF-16 byte count');
  const copy = Buffer.from(bytes);
  return copy.swap16().toString('utf16le');
}

/**
 * Result of a stream decoder looking at the bytes received so far:
 * - `{ value, consumed }`: a complete message;
 * - a number: the total byte count needed before it is worth looking again;
 * - undefined: more bytes needed, count unknown.
 * Decoders throw `ProbeError` for bytes that can never become a valid message.
 */
export type StreamDecoderResult<T> = { value: T; consumed: number } | number | undefined;
export type StreamDecoder<T> = (buffered: Buffer) => StreamDecoderResult<T>;

/**
 * Splits one length-prefixed packet (Java Edition framing without compression: VarInt length
 * of packet ID + data, then packet ID + data). Lengths are checked before waiting for the body:
 * negative or zero → `invalid_response`; above `maxLength` → `response_too_large`.
 */
export function decodeFrame(buffered: Uint8Array, maxLength: number): StreamDecoderResult<Buffer> {
  const header = peekVarInt(buffered, 0);
  if (header === undefined) return undefined;
  const length = header.value;
  if (length <= 0) throw invalid(`packet length ${length}`);
  if (length > maxLength) throw tooLarge(`packet length ${length} exceeds ${maxLength}`);
  const total = header.size + length;
  if (buffered.length < total) return total;
  const body = Buffer.from(buffered.buffer, buffered.byteOffset + header.size, length);
  return { value: body, consumed: total };
}
