/**
 * A server's history on SQLite, read and summed in the reader thread: the rows of the range
 * (up to 720 hourly rows, or 288 raw checks a day) come out of SQLite as one JSON array, and
 * only the bucket sums cross to the main thread. One value instead of a row each: handing
 * rows to JavaScript one by one cost three times the scan on better-sqlite3 and more on libsql
 * (720 hourly rows: 0.9 and 1.7 ms a read, against 0.5 ms as JSON on both).
 *
 * While migration 0003 copies a history into the current layout, the history is read from the
 * previous one (`previous`): the server by its text id, every range summed from its raw
 * checks through their index by server and time, in one statement, so it sees the tables
 * either before the copy's last transaction or after it; after it, the answer says so
 * (`switched`).
 */
import { addToBucket, emptySums, historySource, type BucketSums, type BucketWindow, type HistoryServer } from '../history/uptime-history.js';
import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteConnection } from './binding.js';

export interface HistoryRequest {
  serverId: string;
  window: BucketWindow;
  /** Read the layout before migration 0003. */
  previous?: boolean;
}

export interface HistoryAnswer {
  server: HistoryServer | null;
  sums: BucketSums | null;
  /** Asked of the previous layout, and the file has the current one. */
  switched?: true;
}

type Statement = BetterSqlite3.Statement<unknown[]>;

export function createHistoryReader(database: SqliteConnection): (request: HistoryRequest) => HistoryAnswer {
  let current: ((request: HistoryRequest) => HistoryAnswer) | null = null;
  return (request) => {
    if (!request.previous) return (current ??= currentLayoutReader(database))(request);
    try {
      return previousLayoutRead(database, request);
    } catch (error) {
      if (previousLayoutStands(database)) throw error;
      return { server: null, sums: null, switched: true };
    }
  };
}

/** 1 while the checks table is still the previous layout's (keyed by the server's text id), else 0. */
export const PREVIOUS_LAYOUT_STANDS = "SELECT count(*) AS n FROM pragma_table_info('checks') WHERE name = 'server_id'";

function previousLayoutStands(database: SqliteConnection): boolean {
  return Number(database.prepare(PREVIOUS_LAYOUT_STANDS).pluck().all()[0]) > 0;
}

const rows = <T>(statement: Statement, key: number, from: number, until: number) => JSON.parse(statement.all(key, from, until)[0] as string) as T[];

function currentLayoutReader(database: SqliteConnection): (request: HistoryRequest) => HistoryAnswer {
  const server = database.prepare('SELECT sid, id, host, port, edition FROM servers WHERE id = ?');
  const checks = database
    .prepare('SELECT json_group_array(json_array(checked_at, online, players_online)) FROM checks WHERE server = ? AND checked_at >= ? AND checked_at < ?')
    .pluck();
  const hours = database
    .prepare(
      'SELECT json_group_array(json_array(hour, checks, online, players_n, players_sum, players_peak)) FROM check_hours WHERE server = ? AND hour >= ? AND hour < ?',
    )
    .pluck();
  return ({ serverId, window }) => {
    const row = server.all(serverId)[0] as (HistoryServer & { sid: number }) | undefined;
    if (!row) return { server: null, sums: null };
    const source = historySource(window);
    const sums = emptySums(window.count);
    if (source.table === 'checks') {
      addChecks(sums, rows(checks, row.sid, source.from, source.until), source.from, source.per);
    } else {
      for (const [hour, n, online, playersN, playersSum, peak] of rows<number[]>(hours, row.sid, source.from, source.until)) {
        addToBucket(sums, (hour! - source.from) / source.per, n!, online!, playersN!, playersSum!, peak ?? null);
      }
    }
    return { server: serverOf(row), sums };
  };
}

/**
 * Every range from the raw checks: the previous layout has no hourly rows. Prepared for each
 * read (only an upgrade reads it): a statement kept past the copy's last transaction would be
 * prepared again by SQLite against the renamed tables.
 */
function previousLayoutRead(database: SqliteConnection, { serverId, window }: HistoryRequest): HistoryAnswer {
  const row = database
    .prepare(
      `SELECT id, host, port, edition, (SELECT json_group_array(json_array(checked_at, online, players_online)) FROM checks
        WHERE server_id = s.id AND checked_at >= ? AND checked_at < ?) AS checks FROM servers s WHERE id = ?`,
    )
    .all(window.from, window.until, serverId)[0] as (HistoryServer & { checks: string }) | undefined;
  if (!row) return { server: null, sums: null };
  const sums = emptySums(window.count);
  addChecks(sums, JSON.parse(row.checks) as Array<[number, number, number | null]>, window.from, window.bucketMs);
  return { server: serverOf(row), sums };
}

function addChecks(sums: BucketSums, checks: Array<[number, number, number | null]>, from: number, per: number): void {
  for (const [at, online, players] of checks) {
    const counted = online === 1 && players !== null ? players : null;
    addToBucket(sums, (at - from) / per, 1, online, counted === null ? 0 : 1, counted ?? 0, counted);
  }
}

function serverOf(row: HistoryServer): HistoryServer {
  return { id: row.id, host: row.host, port: row.port, edition: row.edition };
}
