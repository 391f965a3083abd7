/**
 * A server's uptime and players over a range (24 hours, 7 or 30 days), in fixed buckets for
 * GET /history/{address}. A read query only; checks are written by the store's recordCheck.
 * Buckets under an hour (24 hours: 10 minutes) are summed from the raw checks, whole hours
 * (7 and 30 days) from the hourly rollup rows, so a read touches at most a few hundred rows.
 * Where they are summed depends on the database: in SQL on PostgreSQL
 * (postgres/history-reader.ts), in the SQLite store's reader thread (sqlite/history-reader.ts),
 * so only the sums cross to the main thread. This module loads no database code: the SQLite
 * threads import it.
 *
 * Bucket edges are multiples of the bucket size since the epoch (UTC), so every client sees
 * the same buckets whatever the time of its request: the last bucket is the one holding
 * `now`, and the range starts at the edge `count - 1` buckets before it. A check belongs to
 * the bucket with `start <= checked_at < start + size`.
 */
import type { Edition } from '../../core/types.js';

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
  /** Set when the database could not answer in time and this is its last good answer, or while an upgrade reads the previous layout. */
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

/**
 * A range's sums, bucket by bucket, in one array: checks, online checks, online checks with a
 * player count, the sum of those counts, and the highest (-1: none).
 */
export type BucketSums = Float64Array;
const FIELDS = 5;

export function emptySums(count: number): BucketSums {
  const sums = new Float64Array(count * FIELDS);
  for (let i = 0; i < count; i++) sums[i * FIELDS + 4] = -1;
  return sums;
}

/** Adds checks to bucket `index` (ignored outside the range). */
export function addToBucket(sums: BucketSums, index: number, checks: number, online: number, playersN: number, playersSum: number, peak: number | null): void {
  const at = Math.floor(index) * FIELDS;
  if (at < 0 || at >= sums.length) return;
  sums[at] = sums[at]! + checks;
  sums[at + 1] = sums[at + 1]! + online;
  sums[at + 2] = sums[at + 2]! + playersN;
  sums[at + 3] = sums[at + 3]! + playersSum;
  if (peak !== null && peak > sums[at + 4]!) sums[at + 4] = peak;
}

/** Where a range's rows are: raw checks for buckets under an hour, hourly rows for whole hours. */
export function historySource(window: BucketWindow): { table: 'checks' | 'check_hours'; from: number; until: number; per: number } {
  return window.bucketMs < HOUR
    ? { table: 'checks', from: window.from, until: window.until, per: window.bucketMs }
    : { table: 'check_hours', from: window.from / HOUR, until: window.until / HOUR, per: window.bucketMs / HOUR };
}

export interface HistoryServer {
  id: string;
  host: string;
  port: number;
  edition: string;
}

/** The start times of the newest window of each bucket size: every server's answer shares them. */
const timesBySize = new Map<number, { from: number; times: string[] }>();

function bucketTimes(window: BucketWindow): string[] {
  const cached = timesBySize.get(window.bucketMs);
  if (cached?.from === window.from && cached.times.length === window.count) return cached.times;
  const times = Array.from({ length: window.count }, (_, i) => new Date(window.from + i * window.bucketMs).toISOString());
  timesBySize.set(window.bucketMs, { from: window.from, times });
  return times;
}

/** The answer for a server and its range's sums. */
export function serverHistory(server: HistoryServer, range: HistoryRange, window: BucketWindow, sums: BucketSums): ServerHistory {
  let checks = 0;
  let online = 0;
  const times = bucketTimes(window);
  const buckets: HistoryBucket[] = [];
  for (let i = 0; i < window.count; i++) {
    const at = i * FIELDS;
    const bucketChecks = sums[at]!;
    const bucketOnline = sums[at + 1]!;
    const playersN = sums[at + 2]!;
    const playersSum = sums[at + 3]!;
    const peak = sums[at + 4]!;
    checks += bucketChecks;
    online += bucketOnline;
    buckets.push({
      time: times[i]!,
      checks: bucketChecks,
      online: bucketOnline,
      players_avg: playersN === 0 ? null : round2(playersSum / playersN),
      players_max: peak < 0 ? null : peak,
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

/** What a history read returns: the answer is built from it (serverHistory). */
export interface HistorySums {
  server: HistoryServer;
  range: HistoryRange;
  window: BucketWindow;
  sums: BucketSums;
}

/** Reads a server's bucket sums: null when the store has never checked it (or forgot it). */
export type HistoryReader = (serverId: string, range: HistoryRange, now: number) => Promise<HistorySums | null>;
