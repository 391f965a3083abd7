/**
 * A server's history on PostgreSQL (uptime-history.ts): one statement finds the server and sums
 * its rows by bucket, reading them from the tables' primary keys (which include the columns
 * summed; a 30-day range's buckets are the four-hour rows themselves), and sends the sums back
 * as one text value, a line of numbers per bucket. So a read is one round trip and one row,
 * whatever the range. The statements are named, so each
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

/** `b,c,o,n,s,m;b,c,…`: text costs PostgreSQL less to build than JSON, and this side less to read. */
const statement = (table: keyof typeof SUMS) => ({
  name: `observer_history_${table}`,
  text: `SELECT id, host, port, edition,
    (SELECT string_agg(b || ',' || c || ',' || o || ',' || n || ',' || coalesce(s, 0) || ',' || coalesce(m, -1), ';')
      FROM (${SUMS[table]}) AS sums) AS sums
  FROM servers WHERE id = $1`,
});
const STATEMENTS = { checks: statement('checks'), check_hours: statement('check_hours'), check_four_hours: statement('check_four_hours') };

interface Row {
  id: string;
  host: string;
  port: number;
  edition: string;
  sums: string | null;
}

const COMMA = 44;
const SEMICOLON = 59;
const MINUS = 45;
const ZERO = 48;

/**
 * Adds the statement's lines to `sums` (a peak of -1: no online check). Read digit by digit:
 * splitting 180 lines into strings and numbers cost more than the rest of the answer.
 */
function addLines(sums: BucketSums, text: string): void {
  const line = [0, 0, 0, 0, 0, 0];
  let field = 0;
  let value = 0;
  let sign = 1;
  for (let i = 0; i <= text.length; i++) {
    const code = i < text.length ? text.charCodeAt(i) : SEMICOLON;
    if (code === COMMA || code === SEMICOLON) {
      line[field++] = sign * value;
      value = 0;
      sign = 1;
      if (code === SEMICOLON) {
        addToBucket(sums, line[0]!, line[1]!, line[2]!, line[3]!, line[4]!, line[5]!);
        field = 0;
      }
    } else if (code === MINUS) sign = -1;
    else value = value * 10 + code - ZERO;
  }
}

/** At most a line per bucket is summed, whatever the range holds; one row comes back. */
export function postgresHistoryReader(pool: Pool): HistoryReader {
  return async (serverId, range, now) => {
    const window = bucketWindow(range, now);
    const source = historySource(window);
    const { name, text } = STATEMENTS[source.table === 'check_hours' && source.per === 4 ? 'check_four_hours' : source.table];
    const { rows } = await pool.query<Row>({ name, text, values: [serverId, source.from, source.until, source.per] });
    const row = rows[0];
    if (!row) return null;
    const sums = emptySums(window.count);
    if (row.sums !== null) addLines(sums, row.sums);
    return { server: { id: row.id, host: row.host, port: row.port, edition: row.edition }, range, window, sums };
  };
}
