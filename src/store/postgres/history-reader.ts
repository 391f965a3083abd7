/**
 * A server's history on PostgreSQL (uptime-history.ts): one statement finds the server and sums
 * its rows by bucket, reading them from the tables' primary keys (which include the columns
 * summed), and sends the sums back as one JSON value. So a read is one round trip and one row,
 * whatever the range: the round trips and the parsing of rows were most of a read's cost here.
 */
import { CompiledQuery, type Kysely } from 'kysely';
import type { Database } from '../schema.js';
import { addToBucket, bucketWindow, emptySums, historySource, serverHistory, type HistoryReader } from '../uptime-history.js';

/** The sums of one table's rows in bucket order: [bucket, checks, online, players_n, players_sum, players_max]. */
const SUMS = {
  checks: `SELECT (checked_at - $2) / $4 AS b, count(*) AS c, sum(online) AS o,
      count(CASE WHEN online = 1 THEN players_online END) AS n,
      sum(CASE WHEN online = 1 THEN players_online END) AS s,
      max(CASE WHEN online = 1 THEN players_online END) AS m
    FROM checks WHERE server = servers.sid AND checked_at >= $2 AND checked_at < $3 GROUP BY 1`,
  check_hours: `SELECT (hour - $2) / $4 AS b, sum(checks) AS c, sum(online) AS o, sum(players_n) AS n,
      sum(players_sum) AS s, max(players_peak) AS m
    FROM check_hours WHERE server = servers.sid AND hour >= $2 AND hour < $3 GROUP BY 1`,
} as const;

const statement = (table: keyof typeof SUMS) =>
  `SELECT id, host, port, edition,
    (SELECT json_agg(json_build_array(b, c, o, n, s, m)) FROM (${SUMS[table]}) AS sums) AS sums
  FROM servers WHERE id = $1`;
const STATEMENTS = { checks: statement('checks'), check_hours: statement('check_hours') };

type SumsRow = [bucket: number, checks: number, online: number, playersN: number, playersSum: number | null, peak: number | null];

interface Row {
  id: string;
  host: string;
  port: number;
  edition: string;
  sums: SumsRow[] | null;
}

/** At most a row per bucket is summed, whatever the range holds; one row comes back. */
export function kyselyHistoryReader(db: Kysely<Database>): HistoryReader {
  return async (serverId, range, now) => {
    const window = bucketWindow(range, now);
    const source = historySource(window);
    const { rows } = await db.executeQuery<Row>(CompiledQuery.raw(STATEMENTS[source.table], [serverId, source.from, source.until, source.per]));
    const server = rows[0];
    if (!server) return null;
    const sums = emptySums(window.count);
    for (const [bucket, checks, online, playersN, playersSum, peak] of server.sums ?? []) {
      addToBucket(sums, Number(bucket), Number(checks), Number(online), Number(playersN), Number(playersSum ?? 0), peak === null ? null : Number(peak));
    }
    return serverHistory(server, range, window, sums);
  };
}
