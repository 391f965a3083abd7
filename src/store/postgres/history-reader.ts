/**
 * A server's history on PostgreSQL (uptime-history.ts): one statement finds the server and sums
 * its rows by bucket, reading them from the tables' primary keys (which include the columns
 * summed; a 30-day range's buckets are the four-hour rows themselves), and sends the sums back
 * as one bigint[][] value, a row of six integers per bucket, read strictly before it is
 * added. So a read is one round trip and one row, whatever the range. The statements are named, so each
 * connection parses and plans them once; Kysely cannot name a statement, so they go to the
 * store's pool directly.
 *
 * While migration 0003 copies the history into the current layout, a history is read from the
 * previous layout's checks, which its first transaction set aside as `checks_v1` (every range
 * summed from the raw checks, through their index by server and time), in one statement too.
 */
import type { Kysely } from 'kysely';
import type { Pool } from 'pg';
import type { PreviousLayoutReads } from '../history/history-store.js';
import {
  addToBucket,
  bucketWindow,
  emptySums,
  historySource,
  type BucketSums,
  type BucketWindow,
  type HistoryRange,
  type HistoryReader,
  type HistorySums,
} from '../history/uptime-history.js';
import type { Database } from '../schema.js';

/** The sums of one table's rows by bucket: bucket, checks, online, players_n, players_sum, players_max. */
const checkSums = (checksOfServer: string) => `SELECT (checked_at - $2) / $4 AS b, count(*) AS c, sum(online) AS o,
      count(CASE WHEN online = 1 THEN players_online END) AS n,
      sum(CASE WHEN online = 1 THEN players_online END) AS s,
      max(CASE WHEN online = 1 THEN players_online END) AS m
    FROM ${checksOfServer} AND checked_at >= $2 AND checked_at < $3 GROUP BY 1`;
const SUMS = {
  checks: checkSums('checks WHERE server = servers.sid'),
  check_hours: `SELECT (hour - $2) / $4 AS b, sum(checks) AS c, sum(online) AS o, sum(players_n) AS n,
      sum(players_sum) AS s, max(players_peak) AS m
    FROM check_hours WHERE server = servers.sid AND hour >= $2 AND hour < $3 GROUP BY 1`,
  // Buckets of four hours are its rows (migration 0005): nothing to sum. $4 is 4.
  check_four_hours: `SELECT (hour - $2) / $4 AS b, checks AS c, online AS o, players_n AS n, players_sum AS s, players_peak AS m
    FROM check_four_hours WHERE server = servers.sid AND hour >= $2 AND hour < $3`,
} as const;

/**
 * One bigint[6] per bucket: bucket, checks, online, players_n, players_sum, peak (-1: no online
 * check). The bigint[][] comes back in PostgreSQL's text form (`{{0,12,12,12,30,4},{…}}`):
 * the cast makes every element an integer, and its text is read strictly below, a few times
 * cheaper than pg's generic array parser and a string per element.
 */
const withSums = (sums: string) => `SELECT id, host, port, edition,
    (SELECT array_agg(ARRAY[b, c, o, n, coalesce(s, 0), coalesce(m, -1)]::bigint[])::text FROM (${sums}) AS sums) AS sums
  FROM servers WHERE id = $1`;
const statement = (table: keyof typeof SUMS) => ({ name: `observer_history_${table}`, text: withSums(SUMS[table]) });
const STATEMENTS = { checks: statement('checks'), check_hours: statement('check_hours'), check_four_hours: statement('check_four_hours') };

interface Row {
  id: string;
  host: string;
  port: number;
  edition: string;
  sums: string | null;
}

const OPEN = 123; // {
const CLOSE = 125; // }
const COMMA = 44;
const MINUS = 45;
const ZERO = 48;
const NINE = 57;
/** Digits of the longest integer read: 2^53 has 16. */
const MAX_DIGITS = 16;

function malformed(text: string, at: number): TypeError {
  return new TypeError(`history sums: unexpected text at ${at} of ${text.length} characters`);
}

/**
 * Adds the rows of a bigint[][]'s text form to `sums`. Anything but braces, commas, digits and
 * a leading minus, a row of other than six integers, or an integer past 2^53, throws.
 */
export function addSumRows(sums: BucketSums, text: string): void {
  const line = [0, 0, 0, 0, 0, 0];
  const end = text.length - 1;
  if (text.charCodeAt(0) !== OPEN || text.charCodeAt(end) !== CLOSE) throw malformed(text, 0);
  let i = 1;
  while (i < end) {
    if (text.charCodeAt(i++) !== OPEN) throw malformed(text, i - 1);
    for (let field = 0; field < 6; field++) {
      const negative = text.charCodeAt(i) === MINUS;
      if (negative) i++;
      const from = i;
      let value = 0;
      for (let code = text.charCodeAt(i); code >= ZERO && code <= NINE; code = text.charCodeAt(++i)) value = value * 10 + (code - ZERO);
      if (i === from || i - from > MAX_DIGITS || !Number.isSafeInteger(value)) throw malformed(text, from);
      line[field] = negative ? -value : value;
      if (text.charCodeAt(i++) !== (field < 5 ? COMMA : CLOSE)) throw malformed(text, i - 1);
    }
    const peak = line[5]!;
    addToBucket(sums, line[0]!, line[1]!, line[2]!, line[3]!, line[4]!, peak < 0 ? null : peak);
    if (i < end && text.charCodeAt(i++) !== COMMA) throw malformed(text, i - 1);
  }
}

/** At most a row per bucket is summed, whatever the range holds; one row comes back. */
export function postgresHistoryReader(pool: Pool): HistoryReader {
  return async (serverId, range, now) => {
    const window = bucketWindow(range, now);
    const source = historySource(window);
    const { name, text } = STATEMENTS[source.table === 'check_hours' && source.per === 4 ? 'check_four_hours' : source.table];
    const { rows } = await pool.query<Row>({ name, text, values: [serverId, source.from, source.until, source.per] });
    return historySums(rows[0], range, window);
  };
}

/**
 * A history from the previous layout. Not a named statement: a plan kept past the copy's last
 * transaction, which drops `checks_v1`, would name a table that is gone.
 */
const PREVIOUS_LAYOUT_HISTORY = withSums(checkSums('checks_v1 WHERE server_id = servers.id'));

/** The previous layout's checks are there: the copy's first transaction has committed, its last has not. */
const PREVIOUS_LAYOUT_STANDS = "SELECT to_regclass('checks_v1') IS NOT NULL AS stands";

/** Reads of the previous layout; the store asks `stands` first, and again when a read fails. */
export function postgresPreviousLayoutReads(pool: Pool, db: Kysely<Database>): PreviousLayoutReads {
  return {
    db,
    layout: { checks: 'checks_v1', key: 'sid' },
    stands: async () => (await pool.query<{ stands: boolean }>(PREVIOUS_LAYOUT_STANDS)).rows[0]?.stands === true,
    readHistory: async (serverId, range, now) => {
      const window = bucketWindow(range, now);
      const { rows } = await pool.query<Row>(PREVIOUS_LAYOUT_HISTORY, [serverId, window.from, window.until, window.bucketMs]);
      return historySums(rows[0], range, window);
    },
  };
}

function historySums(row: Row | undefined, range: HistoryRange, window: BucketWindow): HistorySums | null {
  if (!row) return null;
  const sums = emptySums(window.count);
  if (row.sums !== null) addSumRows(sums, row.sums);
  return { server: { id: row.id, host: row.host, port: row.port, edition: row.edition }, range, window, sums };
}
