/**
 * Legacy Server List Ping (servers before 1.7).
 * https://minecraft.wiki/w/Java_Edition_protocol/Server_List_Ping#1.6 and #1.4_to_1.5,
 * #Beta_1.8_to_1.3 (formerly wiki.vg "Server List Ping", section "1.6").
 *
 * Request (1.6 form, also understood by 1.4–1.5, which stop reading after `FE 01`):
 *   FE                 packet ID (server list ping)
 *   01                 payload, always 1
 *   FA                 packet ID (plugin message)
 *   00 0B              length of "MC|PingHost" in UTF-16 units, then the string as UTF-16BE
 *   Short              length of the rest: 7 + 2 × hostname length
 *   Byte               protocol version
 *   Short + UTF-16BE   hostname
 *   Int                port
 *
 * Reply: a kick packet `FF`, Short length in UTF-16 units, then UTF-16BE text:
 *   1.4+:    `§1\0<protocol>\0<version>\0<motd>\0<online>\0<max>`
 *   pre-1.4: `<motd>§<online>§<max>` (the MOTD may itself contain `§`, so split from the right)
 */
import { withLatency, type PingResult } from '../core/types.js';
import { cleanServerText, formatMotd } from '../motd/index.js';
import { decodeUtf16BE, encodeUtf16BE, invalid, type StreamDecoderResult } from './codec.js';
import { probe, roundLatency, type HandshakeTarget, type ProbeOptions, type ProbeTarget } from './target.js';
import { connectTcp } from './tcp.js';
import type { StreamConnection } from './transport.js';

/** 74 (0x4a) = 1.6.2, the value in the wiki's example; servers reply the same whatever it is. */
export const LEGACY_PROTOCOL_VERSION = 74;

const PING_HOST_CHANNEL = 'MC|PingHost';

export interface LegacyStatus {
  /** null for pre-1.4 replies, which carry no version. */
  protocol: number | null;
  version: string | null;
  motd: string;
  online: number;
  max: number;
}

/** The 1.6 server list ping with `MC|PingHost` (hostname and port for virtual hosts). */
export function encodeLegacyPing(
  hostname: string,
  port: number,
  protocolVersion: number = LEGACY_PROTOCOL_VERSION,
): Buffer {
  if (hostname.length > 255) throw new RangeError('hostname longer than 255 characters');
  if (!Number.isInteger(port) || port < 0 || port > 0xffff) throw new RangeError('port out of range');
  const channel = encodeUtf16BE(PING_HOST_CHANNEL);
  const host = encodeUtf16BE(hostname);
  const out = Buffer.alloc(3 + 2 + channel.length + 2 + 1 + 2 + host.length + 4);
  let at = out.writeUInt8(0xfe, 0);
  at = out.writeUInt8(0x01, at);
  at = out.writeUInt8(0xfa, at);
  at = out.writeUInt16BE(PING_HOST_CHANNEL.length, at);
  at += channel.copy(out, at);
  at = out.writeUInt16BE(7 + host.length, at);
  at = out.writeUInt8(protocolVersion & 0xff, at);
  at = out.writeUInt16BE(hostname.length, at);
  at += host.copy(out, at);
  out.writeInt32BE(port, at);
  return out;
}

/** Stream decoder for the kick packet: its text once all `2 × length` bytes are in. */
export function readLegacyKick(buffered: Buffer): StreamDecoderResult<string> {
  if (buffered.length === 0) return undefined;
  if (buffered[0] !== 0xff) throw invalid(`expected kick packet 0xff, got ${buffered[0]}`);
  if (buffered.length < 3) return 3;
  const total = 3 + 2 * buffered.readUInt16BE(1);
  if (buffered.length < total) return total;
  return { value: decodeUtf16BE(buffered.subarray(3, total)), consumed: total };
}

const INTEGER = /^-?\d{1,10}$/;

function integer(text: string, what: string): number {
  if (!INTEGER.test(text)) throw invalid(`legacy ${what} is not a number`);
  return Number(text);
}

function playerCount(text: string, what: string): number {
  return Math.min(0x7fffffff, Math.max(0, integer(text, what)));
}

/** Parses the text of a legacy kick reply, either form. */
export function parseLegacyKickText(text: string): LegacyStatus {
  if (text.startsWith('§1\0')) {
    const fields = text.split('\0');
    if (fields.length !== 6) throw invalid(`legacy reply has ${fields.length} fields, expected 6`);
    const [, protocol, version, motd, online, max] = fields as [string, string, string, string, string, string];
    return {
      protocol: integer(protocol, 'protocol'),
      version,
      motd,
      online: playerCount(online, 'online count'),
      max: playerCount(max, 'max count'),
    };
  }
  const maxAt = text.lastIndexOf('§');
  const onlineAt = maxAt > 0 ? text.lastIndexOf('§', maxAt - 1) : -1;
  if (onlineAt < 0) throw invalid('legacy reply is neither §1 nor motd§online§max');
  return {
    protocol: null,
    version: null,
    motd: text.slice(0, onlineAt),
    online: playerCount(text.slice(onlineAt + 1, maxAt), 'online count'),
    max: playerCount(text.slice(maxAt + 1), 'max count'),
  };
}

/** Decodes a whole kick reply from wire bytes. */
export function decodeLegacyKick(wire: Uint8Array): LegacyStatus {
  const result = readLegacyKick(Buffer.from(wire.buffer, wire.byteOffset, wire.length));
  if (result === undefined || typeof result === 'number') throw invalid('truncated legacy reply');
  return parseLegacyKickText(result.value);
}

/** A legacy reply as a PingResult (without latency). */
export function legacyStatusToResult(status: LegacyStatus): Omit<PingResult, 'latencyMs'> {
  return {
    version:
      status.version === null ? null : { name: cleanServerText(status.version, 256), protocol: status.protocol ?? -1 },
    players: { online: status.online, max: status.max, sample: [] },
    motd: formatMotd(status.motd),
    favicon: null,
    extra: {},
  };
}

/** Runs the legacy exchange on a connection it is handed. Latency: request sent → reply complete. */
export async function queryLegacyStatus(connection: StreamConnection, target: HandshakeTarget, now: () => number): Promise<PingResult> {
  const started = now();
  connection.write(encodeLegacyPing(target.hostname, target.port));
  const text = await connection.read(readLegacyKick);
  const latency = now() - started;
  return withLatency(legacyStatusToResult(parseLegacyKickText(text)), roundLatency(latency));
}

/** Pings a pre-1.7 Java server (modern servers answer this too). Rejects only with ProbeError. */
export async function pingLegacy(target: ProbeTarget, options: ProbeOptions = {}): Promise<PingResult> {
  const connect = options.connectTcp ?? connectTcp;
  const now = options.now ?? (() => performance.now());
  return probe(connect, target, (connection) => queryLegacyStatus(connection, target, now));
}
