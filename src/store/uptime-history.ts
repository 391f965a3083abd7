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
import { sql, type Kysely } from 'kysely';
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
      players_avg: playersN === 0 ? null : round2(Number(row!.players_sum) / playersN),
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
  players_sum: number | null;
  players_max: number | null;
}

/** Buckets under an hour, from the raw checks: one range of the (server, time) key. */
async function rawBuckets(db: Kysely<Database>, sid: number, window: BucketWindow): Promise<BucketRow[]> {
  // Truncated to an integer on both dialects (a SQLite binding may bind the numbers as REAL).
  const bucket = sql<number>`CAST((${sql.ref('checked_at')} - ${window.from}) / ${window.bucketMs} AS INTEGER)`;
  const onlinePlayers = sql`CASE WHEN ${sql.ref('online')} = 1 THEN ${sql.ref('players_online')} END`;
  return db
    .selectFrom('checks')
    .select((eb) => [
      bucket.as('bucket'),
      eb.fn.countAll<number>().as('checks'),
      eb.fn.sum<number>('online').as('online'),
      sql<number>`COUNT(${onlinePlayers})`.as('players_n'),
      sql<number | null>`SUM(${onlinePlayers})`.as('players_sum'),
      sql<number | null>`MAX(${onlinePlayers})`.as('players_max'),
    ])
    .where('server', '=', sid)
    .where('checked_at', '>=', window.from)
    .where('checked_at', '<', window.until)
    .groupBy(sql`1`)
    .execute();
}

/** Buckets of whole hours, from the hourly rollup rows: at most 720 of them for 30 days. */
async function hourlyBuckets(db: Kysely<Database>, sid: number, window: BucketWindow): Promise<BucketRow[]> {
  const from = window.from / HOUR;
  const bucket = sql<number>`CAST((${sql.ref('hour')} - ${from}) / ${window.bucketMs / HOUR} AS INTEGER)`;
  return db
    .selectFrom('check_hours')
    .select((eb) => [
      bucket.as('bucket'),
      eb.fn.sum<number>('checks').as('checks'),
      eb.fn.sum<number>('online').as('online'),
      eb.fn.sum<number>('players_n').as('players_n'),
      eb.fn.sum<number>('players_sum').as('players_sum'),
      eb.fn.max('players_peak').as('players_max'),
    ])
    .where('server', '=', sid)
    .where('hour', '>=', from)
    .where('hour', '<', window.until / HOUR)
    .groupBy(sql`1`)
    .execute();
}
