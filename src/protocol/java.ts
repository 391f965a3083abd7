/**
 * Java Edition Server List Ping, 1.7 and later.
 * https://minecraft.wiki/w/Java_Edition_protocol/Server_List_Ping (formerly wiki.vg "Server List Ping")
 *
 *   C→S Handshake        0x00: VarInt protocol version, String server address (≤255),
 *                              Unsigned Short server port, VarInt next state (1 = status)
 *   C→S Status Request   0x00: no fields
 *   S→C Status Response  0x00: String JSON (version, players, description, favicon, …)
 *   C→S Ping Request     0x01: Long payload
 *   S→C Pong Response    0x01: Long, the same payload
 *
 * Every packet is framed as VarInt length (of packet ID + data), VarInt packet ID, data;
 * status packets are never compressed.
 */
import { withLatency, type PingResult, type PlayerSample } from '../core/types.js';
import { ProbeError } from '../core/errors.js';
import { cleanServerText, formatMotd } from '../motd/index.js';
import {
  ByteReader,
  MAX_RESPONSE_BYTES,
  decodeFrame,
  encodeString,
  invalid,
  peekVarInt,
  varIntSize,
  writeVarInt,
  type StreamDecoderResult,
} from './codec.js';
import { acceptFavicon } from './favicon.js';
import { isObject } from '../core/json.js';
import { readModList } from './forge.js';
import { probe, roundLatency, type HandshakeTarget, type ProbeOptions, type ProbeTarget } from './target.js';
import { connectTcp } from './tcp.js';
import type { StreamConnection } from './transport.js';

/**
 * Protocol version sent in the handshake. The wiki: "If the client is pinging to determine
 * what version to use, by convention -1 should be set." Vanilla servers answer a status
 * request whatever the number; proxies (BungeeCord, Velocity) treat -1 as "unknown client"
 * and report their own version instead of echoing ours, which is what a status API wants.
 */
export const STATUS_PROTOCOL_VERSION = -1;

/** Next state 1 = status (2 would be login). */
const NEXT_STATE_STATUS = 1;
const PACKET_HANDSHAKE = 0x00;
const PACKET_STATUS = 0x00;
const PACKET_PING = 0x01;

/** The protocol's limit on the server address string, in characters. */
export const MAX_HANDSHAKE_HOSTNAME = 255;
/** Player-sample entries kept (vanilla sends at most 12). */
export const MAX_PLAYER_SAMPLE = 100;

/** How long to wait for the pong after the status arrived: generous, but well inside a deadline. */
export function pongWaitMs(statusExchangeMs: number): number {
  return Math.min(3000, Math.max(500, 4 * statusExchangeMs));
}

function frame(body: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(varIntSize(body.length) + body.length);
  const at = writeVarInt(out, body.length, 0);
  out.set(body, at);
  return out;
}

/** Handshake packet (framed) announcing a status query for `hostname:port`. */
export function encodeHandshake(
  hostname: string,
  port: number,
  protocolVersion: number = STATUS_PROTOCOL_VERSION,
): Buffer {
  if (hostname.length > MAX_HANDSHAKE_HOSTNAME) throw new RangeError('hostname longer than 255 characters');
  if (!Number.isInteger(port) || port < 0 || port > 0xffff) throw new RangeError('port out of range');
  const host = encodeString(hostname);
  const body = Buffer.allocUnsafe(1 + varIntSize(protocolVersion) + host.length + 2 + 1);
  let at = writeVarInt(body, PACKET_HANDSHAKE, 0);
  at = writeVarInt(body, protocolVersion, at);
  body.set(host, at);
  at += host.length;
  body.writeUInt16BE(port, at);
  at += 2;
  at = writeVarInt(body, NEXT_STATE_STATUS, at);
  return frame(body.subarray(0, at));
}

/** Status Request packet (framed): length 1, ID 0x00. */
export function encodeStatusRequest(): Buffer {
  return Buffer.from([0x01, PACKET_STATUS]);
}

/** Ping Request packet (framed): length 9, ID 0x01, Long payload. */
export function encodePingRequest(payload: bigint): Buffer {
  const out = Buffer.allocUnsafe(10);
  out[0] = 0x09;
  out[1] = PACKET_PING;
  out.writeBigInt64BE(BigInt.asIntN(64, payload), 2);
  return out;
}

/** The JSON object of a Status Response packet body (packet ID + data, no length prefix). */
export function decodeStatusPacket(packet: Uint8Array): Record<string, unknown> {
  const reader = new ByteReader(packet);
  const id = reader.readVarInt();
  if (id !== PACKET_STATUS) throw invalid(`expected status response 0x00, got ${id}`);
  const text = reader.readString(MAX_RESPONSE_BYTES);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ProbeError('invalid_response', { cause: error });
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw invalid('status JSON is not an object');
  }
  return json as Record<string, unknown>;
}

/**
 * Stream decoder for the Status Response: waits for one whole frame, but rejects early when
 * the first byte of the packet is not ID 0x00 (an HTTP server, a pre-1.7 server's kick…).
 */
export function readStatusResponse(buffered: Buffer): StreamDecoderResult<Record<string, unknown>> {
  const result = decodeFrame(buffered, MAX_RESPONSE_BYTES);
  if (typeof result === 'object') return { value: decodeStatusPacket(result.value), consumed: result.consumed };
  const header = peekVarInt(buffered, 0);
  if (header && buffered.length > header.size && buffered[header.size] !== PACKET_STATUS) {
    throw invalid(`expected status response 0x00, got ${buffered[header.size]}`);
  }
  return result;
}

/** Decodes a complete Status Response from wire bytes (length prefix included; anything after it is ignored). */
export function decodeStatusResponse(wire: Uint8Array): Record<string, unknown> {
  const result = readStatusResponse(Buffer.from(wire.buffer, wire.byteOffset, wire.length));
  if (result === undefined || typeof result === 'number') throw invalid('truncated status response');
  return result.value;
}

/** Stream decoder for any one packet: its body (packet ID + data). */
export function readPacket(buffered: Buffer): StreamDecoderResult<Buffer> {
  return decodeFrame(buffered, MAX_RESPONSE_BYTES);
}

/** The payload of a Pong Response packet body, or undefined when the packet is something else. */
export function decodePongPacket(packet: Uint8Array): bigint | undefined {
  if (packet.length !== 9 || packet[0] !== PACKET_PING) return undefined;
  return Buffer.from(packet.buffer, packet.byteOffset, packet.length).readBigInt64BE(1);
}

/** Decodes a Pong Response from wire bytes (length prefix included). */
export function decodePong(wire: Uint8Array): bigint {
  const result = readPacket(Buffer.from(wire.buffer, wire.byteOffset, wire.length));
  if (result === undefined || typeof result === 'number') throw invalid('truncated pong');
  const payload = decodePongPacket(result.value);
  if (payload === undefined) throw invalid('not a pong');
  return payload;
}

function count(value: unknown): number | null {
  if (typeof value !== 'number' || !Number.isFinite(value)) return null;
  return Math.min(0x7fffffff, Math.max(0, Math.trunc(value)));
}

function parseVersion(value: unknown): PingResult['version'] {
  if (!isObject(value)) return null;
  const protocol = value.protocol;
  return {
    name: cleanServerText(value.name, 256),
    // -1: the server did not send a usable number.
    protocol: typeof protocol === 'number' && Number.isSafeInteger(protocol) ? protocol : -1,
  };
}

function parsePlayers(value: unknown): PingResult['players'] {
  if (!isObject(value)) return null;
  const online = count(value.online);
  const max = count(value.max);
  if (online === null || max === null) return null;
  const sample: PlayerSample[] = [];
  if (Array.isArray(value.sample)) {
    for (const entry of value.sample) {
      if (sample.length >= MAX_PLAYER_SAMPLE) break;
      if (!isObject(entry) || typeof entry.name !== 'string') continue;
      sample.push({ name: cleanServerText(entry.name, 256), id: cleanServerText(entry.id, 64) });
    }
  }
  return { online, max, sample };
}

const BOOLEAN_EXTRAS = ['enforcesSecureChat', 'previewsChat', 'preventsChatReports'] as const;

/**
 * The status JSON as a PingResult (without latency). `description` may be a string or a chat
 * component; version and player names are cleaned; a favicon that is not a PNG data URL is
 * dropped. `extra` carries `enforcesSecureChat`, `previewsChat`, `preventsChatReports` when
 * sent as booleans, and `modLoader`, `mods`, `modsTruncated` for Forge/NeoForge servers.
 */
export function parseJavaStatus(json: Record<string, unknown>): Omit<PingResult, 'latencyMs'> {
  const extra: Record<string, unknown> = {};
  for (const key of BOOLEAN_EXTRAS) {
    if (typeof json[key] === 'boolean') extra[key] = json[key];
  }
  const mods = readModList(json);
  if (mods) {
    extra.modLoader = mods.modLoader;
    if (mods.mods) extra.mods = mods.mods;
    if (mods.modsTruncated) extra.modsTruncated = true;
  }
  return {
    version: parseVersion(json.version),
    players: parsePlayers(json.players),
    motd: formatMotd(json.description),
    favicon: acceptFavicon(json.favicon),
    extra,
  };
}

/**
 * Runs the status exchange on a connection it is handed (it never opens or closes one):
 * handshake + status request in one write, status response, then ping/pong for latency.
 * A server that never answers the ping, answers it wrongly or closes still gives its status,
 * with the latency of the status exchange. Frames other than the matching pong are ignored.
 */
export async function queryJavaStatus(
  connection: StreamConnection,
  target: HandshakeTarget,
  now: () => number,
): Promise<PingResult> {
  const started = now();
  connection.write(Buffer.concat([encodeHandshake(target.hostname, target.port), encodeStatusRequest()]));
  const json = await connection.read(readStatusResponse);
  const statusExchange = now() - started;
  const status = parseJavaStatus(json);

  // Vanilla clients send the current time in milliseconds; any value works, the server echoes it.
  const payload = BigInt(Date.now());
  const pingSent = now();
  let latency = statusExchange;
  connection.write(encodePingRequest(payload));
  const giveUpAt = pingSent + pongWaitMs(statusExchange);
  try {
    for (;;) {
      const waitMs = giveUpAt - now();
      if (waitMs <= 0) break;
      const packet = await connection.read(readPacket, { waitMs });
      if (decodePongPacket(packet) === payload) {
        latency = now() - pingSent;
        break;
      }
    }
  } catch {
    // No usable pong before the wait or the deadline ran out: the status stands.
  }
  return withLatency(status, roundLatency(latency));
}

/**
 * Pings a Java Edition server (1.7+) at `target.ip:target.port`, sending `target.hostname`
 * in the handshake. Rejects only with ProbeError; the socket is destroyed however it ends.
 */
export async function pingJava(target: ProbeTarget, options: ProbeOptions = {}): Promise<PingResult> {
  const connect = options.connectTcp ?? connectTcp;
  const now = options.now ?? (() => performance.now());
  return probe(connect, target, (connection) => queryJavaStatus(connection, target, now));
}
