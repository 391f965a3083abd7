/**
 * A server's uptime and players over a range (24 hours, 7 or 30 days), in fixed buckets for
 * GET /history/{address}. A read query only; checks are written by the store's recordCheck.
 * Buckets under an hour (24 hours: 10 minutes) are summed from the raw checks, whole hours
 * (7 and 30 days) from the hourly rollup rows, so a read touches at most a few hundred rows.
 *
 * Bucket edges are multiples of the bucket size since the epoch (UTC), so every client sees
 * the same buckets whatever the time of its request: the last bucket is the one holding
 * `now`, and the range starts at the edge `count - 1` buckets before it. A check belongs to
 * the bucket with `start <= checked_at < start + size`.
 */
import type { Kysely } from 'kysely';
import type { Edition } from '../core/types.js';
import type { Database } from './schema.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Ranges and their bucket sizes: 144, 168 and 180 buckets (at most ~200 for a chart). */
export const HISTORY_RANGES = {
  '24h': { rangeMs: DAY, bucketMs: 10 * MINUTE },
  '7d': { rangeMs: 7 * DAY, bucketMs: HOUR },
  '30d': { rangeMs: 30 * DAY, bucketMs: 4 * HOUR },
} as const;

export type HistoryRange = keyof typeof HISTORY_RANGES;
export const HISTORY_RANGE_NAMES = Object.keys(HISTORY_RANGES) as HistoryRange[];

export interface HistoryBucket {
  /** Start of the bucket, ISO 8601 UTC. */
  time: string;
  checks: number;
  online: number;
  /** Average players over the bucket's online checks (2 decimals); null without one. */
  players_avg: number | null;
  players_max: number | null;
}

export interface ServerHistory {
  server_id: string;
  hostname: string;
  port: number;
  edition: Edition;
  range: HistoryRange;
  bucket_seconds: number;
  from: string;
  to: string;
  checks: number;
  online_checks: number;
  /** Online checks as a percentage of the range's checks (2 decimals); null without a check. */
  uptime_percentage: number | null;
  buckets: HistoryBucket[];
  /** Set when the database could not answer in time and this is its last good answer. */
  stale?: true;
}

export interface BucketWindow {
  /** Start of the first bucket (ms since the epoch). */
  from: number;
  /** End of the last bucket, exclusive. */
  until: number;
  bucketMs: number;
  count: number;
}

/** The buckets of `range` ending with the one that holds `now`. */
export function bucketWindow(range: HistoryRange, now: number): BucketWindow {
  const { rangeMs, bucketMs } = HISTORY_RANGES[range];
  const count = rangeMs / bucketMs;
  const current = Math.floor(now / bucketMs) * bucketMs;
  return { from: current - (count - 1) * bucketMs, until: current + bucketMs, bucketMs, count };
}

const round2 = (value: number) => Math.round(value * 100) / 100;

/** The history of one server, or null when the store has never checked it (or forgot it). */
export async function readServerHistory(
  db: Kysely<Database>,
  serverId: string,
  range: HistoryRange,
  now: number,
): Promise<ServerHistory | null> {
  const server = await db
    .selectFrom('servers')
    .select(['sid', 'id', 'host', 'port', 'edition'])
    .where('id', '=', serverId)
    .executeTakeFirst();
  if (!server) return null;

  const window = bucketWindow(range, now);
  const rows = window.bucketMs < HOUR ? await rawBuckets(db, Number(server.sid), window) : await hourlyBuckets(db, Number(server.sid), window);
  const byIndex = new Map(rows.map((r) => [Number(r.bucket), r]));
  let checks = 0;
  let online = 0;
  const buckets: HistoryBucket[] = [];
  for (let i = 0; i < window.count; i++) {
    const row = byIndex.get(i);
    const bucketChecks = Number(row?.checks ?? 0);
    const bucketOnline = Number(row?.online ?? 0);
    const playersN = Number(row?.players_n ?? 0);
    checks += bucketChecks;
    online += bucketOnline;
    buckets.push({
      time: new Date(window.from + i * window.bucketMs).toISOString(),
      checks: bucketChecks,
      online: bucketOnline,
      players_avg: playersN === 0 ? null : round2(row!.players_sum / playersN),
      players_max: row?.players_max == null ? null : Number(row.players_max),
    });
  }

  return {
    server_id: server.id,
    hostname: server.host,
    port: Number(server.port),
    edition: server.edition as Edition,
    range,
    bucket_seconds: window.bucketMs / 1000,
    from: new Date(window.from).toISOString(),
    to: new Date(window.until).toISOString(),
    checks,
    online_checks: online,
    uptime_percentage: checks === 0 ? null : round2((online * 100) / checks),
    buckets,
  };
}

interface BucketRow {
  bucket: number;
  checks: number;
  online: number;
  players_n: number;
  players_sum: number;
  players_max: number | null;
}

/** Adds a row's counts to its bucket (rows come in time order, so buckets fill one after the other). */
function addTo(buckets: Map<number, BucketRow>, bucket: number, checks: number, online: number, playersN: number, playersSum: number, peak: number | null): void {
  let row = buckets.get(bucket);
  if (!row) buckets.set(bucket, (row = { bucket, checks: 0, online: 0, players_n: 0, players_sum: 0, players_max: null }));
  row.checks += checks;
  row.online += online;
  row.players_n += playersN;
  row.players_sum += playersSum;
  if (peak !== null && peak > (row.players_max ?? -1)) row.players_max = peak;
}

/**
 * Buckets under an hour, from the raw checks: one range of the (server, time) key, summed here
 * rather than grouped by the database (which would sort the rows again).
 */
async function rawBuckets(db: Kysely<Database>, sid: number, window: BucketWindow): Promise<BucketRow[]> {
  const rows = await db
    .selectFrom('checks')
    .select(['checked_at', 'online', 'players_online'])
    .where('server', '=', sid)
    .where('checked_at', '>=', window.from)
    .where('checked_at', '<', window.until)
    .execute();
  const buckets = new Map<number, BucketRow>();
  for (const r of rows) {
    const online = Number(r.online);
    const players = online === 1 && r.players_online !== null ? Number(r.players_online) : null;
    addTo(buckets, Math.floor((Number(r.checked_at) - window.from) / window.bucketMs), 1, online, players === null ? 0 : 1, players ?? 0, players);
  }
  return [...buckets.values()];
}

/** Buckets of whole hours, from the hourly rollup rows: at most 720 of them for 30 days. */
async function hourlyBuckets(db: Kysely<Database>, sid: number, window: BucketWindow): Promise<BucketRow[]> {
  const from = window.from / HOUR;
  const rows = await db
    .selectFrom('check_hours')
    .select(['hour', 'checks', 'online', 'players_n', 'players_sum', 'players_peak'])
    .where('server', '=', sid)
    .where('hour', '>=', from)
    .where('hour', '<', window.until / HOUR)
    .execute();
  const buckets = new Map<number, BucketRow>();
  const hoursPerBucket = window.bucketMs / HOUR;
  for (const r of rows) {
    const peak = r.players_peak === null ? null : Number(r.players_peak);
    addTo(buckets, Math.floor((Number(r.hour) - from) / hoursPerBucket), Number(r.checks), Number(r.online), Number(r.players_n), Number(r.players_sum), peak);
  }
  return [...buckets.values()];
}
