/**
 * Query (UT3 / GameSpy 4 "full stat") over UDP: the player list, plugins, software and map a
 * server shares when `enable-query=true` (Java) or its Bedrock counterpart (PocketMine, Geyser).
 * https://minecraft.wiki/w/Query (formerly wiki.vg "Query").
 *
 *   C→S Handshake:  FE FD | 09 | Int32 session ID                                    (7 bytes)
 *   S→C Handshake:  09 | Int32 session ID | challenge token (ASCII decimal, NUL-terminated)
 *   C→S Full stat:  FE FD | 00 | Int32 session ID | Int32 challenge token | 00 00 00 00 (15 bytes)
 *   S→C Full stat:  00 | Int32 session ID | "splitnum" 00 80 00 (11 bytes of padding)
 *                   | key 00 value 00 … | 00 (empty key)
 *                   | 01 "player_" 00 00 (10 bytes) | name 00 … | 00 (empty name)
 *
 * The pitfall: the token is the decimal text of a *signed* 32-bit integer (`-1243424`); it is
 * sent back as that int32, big-endian. Reading it unsigned, or as a 64-bit number, makes the
 * server ignore the request.
 *
 * Vanilla writes the strings in ISO-8859-1 and cuts every character above U+00FF to its low byte
 * (so `⨀` in a MOTD becomes a NUL inside the hostname value); PocketMine writes UTF-8. Values are
 * decoded as UTF-8 when they are valid UTF-8, else as Latin-1.
 */
import { randomInt } from 'node:crypto';
import { ProbeError } from '../core/errors.js';
import { cleanServerText } from '../motd/index.js';
import { invalid, tooLarge } from './codec.js';
import { asProbeError, type ProbeOptions, type ProbeTarget } from './target.js';
import { connectUdp } from './udp.js';
import type { DatagramConnection } from './transport.js';

const MAGIC = 0xfefd;
const TYPE_HANDSHAKE = 0x09;
const TYPE_STAT = 0x00;
/** "splitnum" 00 80 00: constant padding before the key/value section. */
const STAT_PADDING_BYTES = 11;
/** 01 "player_" 00 00: the marker before the player names. */
const PLAYER_SECTION = Buffer.from('01706c617965725f0000', 'hex');

/** The largest datagram accepted (UDP's own ceiling) and the most one query may receive in all. */
export const MAX_QUERY_DATAGRAM_BYTES = 65_507;
export const MAX_QUERY_TOTAL_BYTES = 256 * 1024;
/** Caps on what a reply may hold, whatever the datagram size. */
export const MAX_QUERY_FIELDS = 64;
export const MAX_QUERY_PLAYERS = 1_000;
export const MAX_QUERY_PLUGINS = 256;
const MAX_VALUE_CHARS = 1_024;
const MAX_NAME_CHARS = 64;
/** UDP may lose a request or its reply: resend after this long without one. */
export const QUERY_RESEND_INTERVAL_MS = 500;
/**
 * Packets one Query sends in all: the handshake, the full stat, and one resend of whichever was
 * lost. A silent port (the query disabled, or a target that never asked to be queried) gets no
 * more than this however long the deadline (docs/hostile-clients.md).
 */
export const MAX_QUERY_PACKETS = 3;
/** How long the last packet's reply is awaited when the caller's signal has no earlier deadline. */
const LAST_REPLY_WAIT_MS = 5_000;

/** Keys vanilla, Paper, Geyser and PocketMine send; used to find the end of a hostname holding a NUL. */
const KNOWN_KEYS = new Set([
  'hostname',
  'gametype',
  'game_id',
  'version',
  'server_engine',
  'plugins',
  'map',
  'numplayers',
  'maxplayers',
  'whitelist',
  'hostport',
  'hostip',
]);

export interface QueryPlugins {
  /** The software before the `:` (`Paper on 1.16.5-R0.1-SNAPSHOT`), or `vanilla` when the server sends nothing. */
  name: string;
  /** `Name Version` entries after the `:`, `;`-separated. */
  list: string[];
}

/** What a full stat tells, as the API returns it in `queryResult`. */
export interface QueryResult {
  players: string[];
  plugins: QueryPlugins;
  software: string | null;
  map: string | null;
  gameType: string | null;
  gameId: string | null;
  hostname: string | null;
  playersOnline: number | null;
  playersMax: number | null;
  hostPort: number | null;
  hostIp: string | null;
}

export interface FullStat {
  sessionId: number;
  fields: Map<string, string>;
  players: string[];
}

/** A session ID with the low nibble of each byte only: vanilla masks it so (`& 0x0F0F0F0F`). */
export function newSessionId(): number {
  return randomInt(0, 0x7fffffff) & 0x0f0f0f0f;
}

export function encodeQueryHandshake(sessionId: number): Buffer {
  const out = Buffer.alloc(7);
  out.writeUInt16BE(MAGIC, 0);
  out[2] = TYPE_HANDSHAKE;
  out.writeInt32BE(sessionId | 0, 3);
  return out;
}

export function encodeFullStatRequest(sessionId: number, challengeToken: number): Buffer {
  const out = Buffer.alloc(15);
  out.writeUInt16BE(MAGIC, 0);
  out[2] = TYPE_STAT;
  out.writeInt32BE(sessionId | 0, 3);
  out.writeInt32BE(challengeToken | 0, 7);
  return out;
}

/** Reads type and session ID; null when the datagram is not a reply of `type` to `sessionId` (ignored). */
function matchesSession(datagram: Uint8Array, type: number, sessionId: number): boolean {
  if (datagram.length < 5 || datagram[0] !== type) return false;
  return Buffer.from(datagram.buffer, datagram.byteOffset, datagram.length).readInt32BE(1) === (sessionId | 0);
}

/**
 * The challenge token of a handshake reply to `sessionId`: undefined when the datagram is not
 * one (wrong type or session: ignored); `invalid_response` when it is but the token is not the
 * decimal text of a signed 32-bit integer.
 */
export function decodeQueryHandshake(datagram: Uint8Array, sessionId: number): number | undefined {
  if (!matchesSession(datagram, TYPE_HANDSHAKE, sessionId)) return undefined;
  const body = Buffer.from(datagram.buffer, datagram.byteOffset + 5, datagram.length - 5);
  const end = body.indexOf(0);
  const text = body.subarray(0, end === -1 ? body.length : end).toString('latin1');
  if (!/^-?\d{1,10}$/.test(text)) throw invalid('challenge token is not a number');
  const value = Number(text);
  if (value < -0x80000000 || value > 0x7fffffff) throw invalid('challenge token is not a signed 32-bit integer');
  return value;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function text(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('latin1');
  }
}

/** NUL-terminated strings from `from` up to `end`; `invalid_response` when the last has no NUL. */
function splitStrings(bytes: Buffer, from: number, end: number): Buffer[] {
  const out: Buffer[] = [];
  let at = from;
  while (at < end) {
    const nul = bytes.indexOf(0, at);
    if (nul === -1 || nul >= end) throw invalid('unterminated string');
    out.push(bytes.subarray(at, nul));
    at = nul + 1;
  }
  return out;
}

/**
 * Decodes a full stat reply to `sessionId`: undefined when it is not one (ignored), else the
 * key/value fields and player names, bounded by MAX_QUERY_FIELDS and MAX_QUERY_PLAYERS.
 */
export function decodeFullStat(datagram: Uint8Array, sessionId: number): FullStat | undefined {
  if (!matchesSession(datagram, TYPE_STAT, sessionId)) return undefined;
  const bytes = Buffer.from(datagram.buffer, datagram.byteOffset, datagram.length);
  const start = 5 + STAT_PADDING_BYTES;
  if (bytes.length < start) throw invalid('full stat is truncated');
  // The key/value section ends with an empty key (00) right before the player marker.
  const marker = bytes.indexOf(PLAYER_SECTION, start);
  if (marker === -1 || marker === start || bytes[marker - 1] !== 0) throw invalid('no player section');
  const tokens = splitStrings(bytes, start, marker - 1);
  const fields = new Map<string, string>();
  for (let i = 0; i < tokens.length; i += 2) {
    const key = text(tokens[i] as Buffer);
    let value = text(tokens[i + 1] ?? Buffer.alloc(0));
    // Vanilla's hostname may hold a NUL (see above): it runs until the next known key.
    if (key === 'hostname') {
      while (i + 2 < tokens.length && !KNOWN_KEYS.has(text(tokens[i + 2] as Buffer))) {
        value += `\u0000${text(tokens[i + 2] as Buffer)}`;
        i += 1;
      }
    }
    if (key === '') break;
    if (fields.size >= MAX_QUERY_FIELDS) throw tooLarge(`more than ${MAX_QUERY_FIELDS} query fields`);
    if (!fields.has(key)) fields.set(key, value);
  }
  const names = splitStrings(bytes, marker + PLAYER_SECTION.length, bytes.length);
  const players: string[] = [];
  for (const name of names) {
    if (name.length === 0) break;
    if (players.length >= MAX_QUERY_PLAYERS) throw tooLarge(`more than ${MAX_QUERY_PLAYERS} players`);
    players.push(cleanServerText(text(name), MAX_NAME_CHARS));
  }
  return { sessionId, fields, players };
}

/**
 * `plugins` as Bukkit/Paper and PocketMine send it: `Software: Plugin 1.0; Other 2.0`, or the
 * software alone, or nothing (vanilla).
 */
export function parseQueryPlugins(raw: string): QueryPlugins {
  const value = raw.trim();
  if (value === '') return { name: 'vanilla', list: [] };
  const colon = value.indexOf(':');
  if (colon === -1) return { name: cleanServerText(value, MAX_VALUE_CHARS), list: [] };
  const list = value
    .slice(colon + 1)
    .split(';')
    .map((entry) => cleanServerText(entry.trim(), 256))
    .filter((entry) => entry !== '')
    .slice(0, MAX_QUERY_PLUGINS);
  return { name: cleanServerText(value.slice(0, colon).trim(), MAX_VALUE_CHARS), list };
}

function field(stat: FullStat, key: string): string | null {
  const value = stat.fields.get(key);
  if (value === undefined) return null;
  const clean = cleanServerText(value, MAX_VALUE_CHARS);
  return clean === '' ? null : clean;
}

function count(stat: FullStat, key: string, max: number): number | null {
  const value = stat.fields.get(key)?.trim();
  if (value === undefined || !/^\d{1,10}$/.test(value)) return null;
  const n = Number(value);
  return n <= max ? n : null;
}

export function fullStatToResult(stat: FullStat): QueryResult {
  return {
    players: stat.players,
    plugins: parseQueryPlugins(stat.fields.get('plugins') ?? ''),
    software: field(stat, 'version'),
    map: field(stat, 'map'),
    gameType: field(stat, 'gametype'),
    gameId: field(stat, 'game_id'),
    hostname: field(stat, 'hostname'),
    playersOnline: count(stat, 'numplayers', 0x7fffffff),
    playersMax: count(stat, 'maxplayers', 0x7fffffff),
    hostPort: (() => {
      const port = count(stat, 'hostport', 65535);
      return port === null || port === 0 ? null : port;
    })(),
    hostIp: field(stat, 'hostip'),
  };
}

/**
 * Runs the handshake then the full stat on a connection it is handed. A step resends its
 * request after QUERY_RESEND_INTERVAL_MS without a reply with our session ID, within
 * MAX_QUERY_PACKETS packets for both steps; datagrams of another type or session are ignored
 * (the transport already drops other sources). The deadline (the connection's signal), or the
 * packets spent without a reply, ends it with `timeout`.
 */
export async function queryFullStat(connection: DatagramConnection, now: () => number): Promise<QueryResult> {
  const sessionId = newSessionId();
  let sent = 0;
  let challenge: number | undefined;
  let nextSend = now();
  for (;;) {
    if (now() >= nextSend) {
      if (sent >= MAX_QUERY_PACKETS) throw new ProbeError('timeout', { cause: new Error('no query reply') });
      connection.send(
        challenge === undefined ? encodeQueryHandshake(sessionId) : encodeFullStatRequest(sessionId, challenge),
      );
      sent += 1;
      nextSend = now() + (sent < MAX_QUERY_PACKETS ? QUERY_RESEND_INTERVAL_MS : LAST_REPLY_WAIT_MS);
    }
    const datagram = await connection.receive(nextSend - now());
    if (datagram === undefined) continue;
    if (challenge === undefined) {
      challenge = decodeQueryHandshake(datagram, sessionId);
      if (challenge !== undefined) nextSend = now();
      continue;
    }
    const stat = decodeFullStat(datagram, sessionId);
    if (stat) return fullStatToResult(stat);
  }
}

/** Queries `target.ip:target.port` over UDP. Rejects only with ProbeError. */
export async function queryServer(target: ProbeTarget, options: ProbeOptions = {}): Promise<QueryResult> {
  const connect = options.connectUdp ?? connectUdp;
  const now = options.now ?? (() => performance.now());
  let connection: DatagramConnection | undefined;
  try {
    connection = await connect({ ip: target.ip, port: target.port, signal: target.signal, maxBytes: MAX_QUERY_TOTAL_BYTES });
    return await queryFullStat(connection, now);
  } catch (error) {
    throw asProbeError(error);
  } finally {
    connection?.close();
  }
}
