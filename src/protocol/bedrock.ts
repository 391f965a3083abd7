/**
 * Bedrock Edition status through RakNet's offline (unconnected) ping.
 * https://wiki.vg/Raknet_Protocol#Unconnected_Ping and #Unconnected_Pong,
 * https://minecraft.wiki/w/RakNet (Unconnected Ping 0x01, Unconnected Pong 0x1c).
 *
 *   C→S Unconnected Ping 0x01: Long time, Magic (16 bytes), Long client GUID          (33 bytes)
 *   S→C Unconnected Pong 0x1c: Long time (echoed), Long server GUID, Magic,
 *                              String server ID (Unsigned Short length, UTF-8)
 *
 * Server ID (Bedrock's "MOTD" string, `;`-separated, `\;` escapes a semicolon in the MOTD):
 *   edition;MOTD line 1;protocol;version;players online;max players;server unique ID;
 *   MOTD line 2 (level name);game mode;game mode number;IPv4 port;IPv6 port;
 */
import { randomBytes } from 'node:crypto';
import { withLatency, type PingResult } from '../core/types.js';
import { ProbeError } from '../core/errors.js';
import { cleanServerText, formatMotd } from '../motd/index.js';
import { ByteReader, invalid } from './codec.js';
import { probe, roundLatency, type ProbeOptions, type ProbeTarget } from './target.js';
import { connectUdp } from './udp.js';
import type { DatagramConnection } from './transport.js';

/** RakNet's OFFLINE_MESSAGE_DATA_ID: marks offline messages. */
export const OFFLINE_MESSAGE_MAGIC = Buffer.from('00ffff00fefefefefdfdfdfd12345678', 'hex');
const UNCONNECTED_PING = 0x01;
const UNCONNECTED_PONG = 0x1c;
/** id + time + server GUID + magic + string length. */
const PONG_HEADER_BYTES = 1 + 8 + 8 + 16 + 2;

/** UDP may lose the ping or the pong: resend this often until the deadline. */
export const RESEND_INTERVAL_MS = 500;
/** Hard stop, in case a caller's signal has no deadline: 60 pings (30 s). */
export const MAX_PING_ATTEMPTS = 60;

export interface UnconnectedPong {
  time: bigint;
  serverGuid: bigint;
  serverId: string;
}

export interface BedrockAdvertisement {
  /** `MCPE` (Bedrock) or `MCEE` (Education Edition). */
  edition: string;
  /** MOTD line 1 (may hold `§` codes). */
  motd: string;
  protocol: number;
  version: string;
  online: number;
  max: number;
  serverGuid: string | null;
  /** MOTD line 2, the level (world) name on vanilla servers. */
  levelName: string | null;
  gameMode: string | null;
  gameModeId: number | null;
  portIPv4: number | null;
  portIPv6: number | null;
}

/** Unconnected Ping (0x01) with the given time and client GUID. */
export function encodeUnconnectedPing(time: bigint, clientGuid: bigint): Buffer {
  const out = Buffer.alloc(33);
  out[0] = UNCONNECTED_PING;
  out.writeBigInt64BE(BigInt.asIntN(64, time), 1);
  OFFLINE_MESSAGE_MAGIC.copy(out, 9);
  out.writeBigInt64BE(BigInt.asIntN(64, clientGuid), 25);
  return out;
}

/**
 * Decodes an Unconnected Pong: checks the packet ID and the magic, then reads the server ID
 * string, whose length is checked against what the datagram holds. Throws `invalid_response`.
 * The echoed time is returned for the caller to check against what it sent.
 */
export function decodeUnconnectedPong(datagram: Uint8Array): UnconnectedPong {
  if (datagram.length < PONG_HEADER_BYTES) throw invalid(`pong of ${datagram.length} bytes is truncated`);
  const reader = new ByteReader(datagram);
  const id = reader.readUInt8();
  if (id !== UNCONNECTED_PONG) throw invalid(`expected unconnected pong 0x1c, got ${id}`);
  const time = reader.readBigInt64BE();
  const serverGuid = reader.readBigInt64BE();
  const magic = reader.readBytes(16);
  if (!OFFLINE_MESSAGE_MAGIC.equals(magic)) throw invalid('offline message magic mismatch');
  const length = reader.readUInt16BE();
  const bytes = reader.readBytes(length);
  const serverId = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('utf8');
  return { time, serverGuid, serverId };
}

/** Splits the server ID on `;`, where `\;` is a literal semicolon (it appears in MOTDs). */
export function splitServerId(serverId: string): string[] {
  const fields: string[] = [];
  let current = '';
  for (let i = 0; i < serverId.length; i++) {
    const char = serverId[i] as string;
    if (char === '\\' && serverId[i + 1] === ';') {
      current += ';';
      i += 1;
    } else if (char === ';') {
      fields.push(current);
      current = '';
    } else {
      current += char;
    }
  }
  if (current.length > 0) fields.push(current);
  return fields;
}

const UNSIGNED = /^\d{1,10}$/;
const SIGNED = /^-?\d{1,10}$/;

function optionalInteger(text: string | undefined, min: number, max: number): number | null {
  if (text === undefined || !SIGNED.test(text)) return null;
  const value = Number(text);
  return value >= min && value <= max ? value : null;
}

function optionalText(text: string | undefined, maxLength: number): string | null {
  if (text === undefined) return null;
  const clean = cleanServerText(text, maxLength);
  return clean === '' ? null : clean;
}

/**
 * Parses the server ID string. The first six fields (edition to max players) are required and
 * checked; the later ones are optional (older servers and some proxies omit them).
 */
export function parseServerId(serverId: string): BedrockAdvertisement {
  const fields = splitServerId(serverId);
  if (fields.length < 6) throw invalid(`server ID has ${fields.length} fields, expected at least 6`);
  const [edition, motd, protocol, version, online, max] = fields as [string, string, string, string, string, string];
  const cleanEdition = cleanServerText(edition, 16);
  if (cleanEdition === '') throw invalid('missing edition');
  if (!UNSIGNED.test(protocol)) throw invalid('protocol is not a number');
  if (!SIGNED.test(online) || !SIGNED.test(max)) throw invalid('player counts are not numbers');
  const count = (text: string): number => Math.min(0x7fffffff, Math.max(0, Number(text)));
  const serverGuid = fields[6];
  return {
    edition: cleanEdition,
    motd,
    protocol: Number(protocol),
    version: cleanServerText(version, 64),
    online: count(online),
    max: count(max),
    serverGuid: serverGuid !== undefined && /^-?\d{1,20}$/.test(serverGuid) ? serverGuid : null,
    levelName: optionalText(fields[7], 256),
    gameMode: optionalText(fields[8], 32),
    gameModeId: optionalInteger(fields[9], 0, 0xffff),
    portIPv4: optionalInteger(fields[10], 0, 0xffff),
    portIPv6: optionalInteger(fields[11], 0, 0xffff),
  };
}

/**
 * A Bedrock advertisement as a PingResult (without latency). The MOTD is line 1, plus line 2
 * (the level name) on a second line when the server sends one, as the client's server list
 * shows them. `extra`: edition, serverGuid, levelName, gameMode, gameModeId, portIPv4,
 * portIPv6 (each only when the server sends a usable value).
 */
export function bedrockAdvertisementToResult(
  ad: BedrockAdvertisement,
  headerGuid?: bigint,
): Omit<PingResult, 'latencyMs'> {
  const extra: Record<string, unknown> = { edition: ad.edition };
  const serverGuid = ad.serverGuid ?? (headerGuid === undefined ? null : BigInt.asUintN(64, headerGuid).toString());
  if (serverGuid !== null) extra.serverGuid = serverGuid;
  if (ad.levelName !== null) extra.levelName = ad.levelName;
  if (ad.gameMode !== null) extra.gameMode = ad.gameMode;
  if (ad.gameModeId !== null) extra.gameModeId = ad.gameModeId;
  if (ad.portIPv4 !== null) extra.portIPv4 = ad.portIPv4;
  if (ad.portIPv6 !== null) extra.portIPv6 = ad.portIPv6;
  return {
    version: { name: ad.version, protocol: ad.protocol },
    players: { online: ad.online, max: ad.max, sample: [] },
    motd: formatMotd(ad.levelName === null ? ad.motd : `${ad.motd}\n${ad.levelName}`),
    favicon: null,
    extra,
  };
}

/**
 * Runs the ping on a datagram connection it is handed: sends an Unconnected Ping every
 * RESEND_INTERVAL_MS (each with its own time, so the echo says which one was answered) until
 * a pong echoing one of them arrives. A datagram from the target that is not a valid pong
 * fails with `invalid_response`; a valid pong echoing a time never sent (stale or forged) is
 * ignored. The deadline (the connection's signal) ends the loop with `timeout`.
 */
export async function queryBedrockStatus(connection: DatagramConnection, now: () => number): Promise<PingResult> {
  const clientGuid = randomBytes(8).readBigInt64BE(0);
  const sentAt = new Map<bigint, number>();
  let lastTime = -1n;
  let nextSend = now();
  for (;;) {
    const current = now();
    if (current >= nextSend) {
      if (sentAt.size >= MAX_PING_ATTEMPTS) {
        throw new ProbeError('timeout', { cause: new Error('no pong after the last attempt') });
      }
      let time = BigInt(Math.floor(current));
      if (time <= lastTime) time = lastTime + 1n;
      lastTime = time;
      sentAt.set(time, current);
      connection.send(encodeUnconnectedPing(time, clientGuid));
      nextSend = current + RESEND_INTERVAL_MS;
    }
    const datagram = await connection.receive(nextSend - now());
    if (datagram === undefined) continue;
    const pong = decodeUnconnectedPong(datagram);
    const pingedAt = sentAt.get(pong.time);
    if (pingedAt === undefined) continue;
    const latency = now() - pingedAt;
    const ad = parseServerId(pong.serverId);
    return withLatency(bedrockAdvertisementToResult(ad, pong.serverGuid), roundLatency(latency));
  }
}

/** Pings a Bedrock server over UDP at `target.ip:target.port`. Rejects only with ProbeError. */
export async function pingBedrock(target: ProbeTarget, options: ProbeOptions = {}): Promise<PingResult> {
  const connect = options.connectUdp ?? connectUdp;
  const now = options.now ?? (() => performance.now());
  return probe(connect, target, (connection) => queryBedrockStatus(connection, now));
}
