/**
 * A server's history on PostgreSQL (uptime-history.ts): one statement finds the server and sums
 * its rows by bucket, reading them from the tables' primary keys (which include the columns
 * summed; a 30-day range's buckets are the four-hour rows themselves), and sends the sums back
 * as one bigint[][] value, a row of six integers per bucket, each checked to be one before it
 * is added. So a read is one round trip and one row, whatever the range. The statements are named, so each
 * connection parses and plans them once; Kysely cannot name a statement, so they go to the
 * store's pool directly.
 */
import type { Pool } from 'pg';
import { addToBucket, bucketWindow, emptySums, historySource, type BucketSums, type HistoryReader } from '../uptime-history.js';

/** The sums of one table's rows by bucket: bucket, checks, online, players_n, players_sum, players_max. */
const SUMS = {
  checks: `SELECT (checked_at - $2) / $4 AS b, count(*) AS c, sum(online) AS o,
      count(CASE WHEN online = 1 THEN players_online END) AS n,
      sum(CASE WHEN online = 1 THEN players_online END) AS s,
      max(CASE WHEN online = 1 THEN players_online END) AS m
    FROM checks WHERE server = servers.sid AND checked_at >= $2 AND checked_at < $3 GROUP BY 1`,
  check_hours: `SELECT (hour - $2) / $4 AS b, sum(checks) AS c, sum(online) AS o, sum(players_n) AS n,
      sum(players_sum) AS s, max(players_peak) AS m
    FROM check_hours WHERE server = servers.sid AND hour >= $2 AND hour < $3 GROUP BY 1`,
  // Buckets of four hours are its rows (migration 0005): nothing to sum. $4 is 4.
  check_four_hours: `SELECT (hour - $2) / $4 AS b, checks AS c, online AS o, players_n AS n, players_sum AS s, players_peak AS m
    FROM check_four_hours WHERE server = servers.sid AND hour >= $2 AND hour < $3`,
} as const;

/** One bigint[6] per bucket: bucket, checks, online, players_n, players_sum, peak (-1: no online check). */
const statement = (table: keyof typeof SUMS) => ({
  name: `observer_history_${table}`,
  text: `SELECT id, host, port, edition,
    (SELECT array_agg(ARRAY[b, c, o, n, coalesce(s, 0), coalesce(m, -1)]::bigint[]) FROM (${SUMS[table]}) AS sums) AS sums
  FROM servers WHERE id = $1`,
});
const STATEMENTS = { checks: statement('checks'), check_hours: statement('check_hours'), check_four_hours: statement('check_four_hours') };

interface Row {
  id: string;
  host: string;
  port: number;
  edition: string;
  /** As pg parses a bigint[][]: arrays of decimal strings. */
  sums: unknown;
}

/** An integer as pg's array parser hands it over (a decimal string), or an error naming what came instead. */
function integer(value: unknown): number {
  const n = typeof value === 'string' && /^-?\d{1,16}$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n)) throw new TypeError(`history sums: ${String(value)} is not an integer`);
  return n;
}

/** Adds the statement's rows to `sums`, each checked to be six integers. */
function addRows(sums: BucketSums, rows: unknown): void {
  if (!Array.isArray(rows)) throw new TypeError('history sums: not an array');
  for (const row of rows as unknown[]) {
    if (!Array.isArray(row) || row.length !== 6) throw new TypeError('history sums: a bucket is not six integers');
    const peak = integer(row[5]);
    addToBucket(sums, integer(row[0]), integer(row[1]), integer(row[2]), integer(row[3]), integer(row[4]), peak < 0 ? null : peak);
  }
}

/** At most a row per bucket is summed, whatever the range holds; one row comes back. */
export function postgresHistoryReader(pool: Pool): HistoryReader {
  return async (serverId, range, now) => {
    const window = bucketWindow(range, now);
    const source = historySource(window);
    const { name, text } = STATEMENTS[source.table === 'check_hours' && source.per === 4 ? 'check_four_hours' : source.table];
    const { rows } = await pool.query<Row>({ name, text, values: [serverId, source.from, source.until, source.per] });
    const row = rows[0];
    if (!row) return null;
    const sums = emptySums(window.count);
    if (row.sums !== null) addRows(sums, row.sums);
    return { server: { id: row.id, host: row.host, port: row.port, edition: row.edition }, range, window, sums };
  };
}
