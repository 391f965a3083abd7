/**
 * A server's history on SQLite, read and summed in the reader thread: the rows of the range
 * (up to 720 hourly rows, or 288 raw checks a day) are walked there, in key order, and only
 * the bucket sums cross to the main thread.
 */
import { addToBucket, emptySums, historySource, type BucketSums, type BucketWindow, type HistoryServer } from '../uptime-history.js';
import type { SqliteConnection } from './binding.js';

export interface HistoryRequest {
  serverId: string;
  window: BucketWindow;
}

export interface HistoryAnswer {
  server: HistoryServer | null;
  sums: BucketSums | null;
}

export function createHistoryReader(database: SqliteConnection): (request: HistoryRequest) => HistoryAnswer {
  const server = database.prepare('SELECT sid, id, host, port, edition FROM servers WHERE id = ?');
  const checks = database.prepare('SELECT checked_at, online, players_online FROM checks WHERE server = ? AND checked_at >= ? AND checked_at < ?').raw(true);
  const hours = database
    .prepare('SELECT hour, checks, online, players_n, players_sum, players_peak FROM check_hours WHERE server = ? AND hour >= ? AND hour < ?')
    .raw(true);
  return ({ serverId, window }) => {
    const row = server.all(serverId)[0] as (HistoryServer & { sid: number }) | undefined;
    if (!row) return { server: null, sums: null };
    const source = historySource(window);
    const sums = emptySums(window.count);
    if (source.table === 'checks') {
      for (const [at, online, players] of checks.iterate(row.sid, source.from, source.until) as Iterable<[number, number, number | null]>) {
        const counted = online === 1 && players !== null ? players : null;
        addToBucket(sums, (at - source.from) / source.per, 1, online, counted === null ? 0 : 1, counted ?? 0, counted);
      }
    } else {
      for (const [hour, n, online, playersN, playersSum, peak] of hours.iterate(row.sid, source.from, source.until) as Iterable<number[]>) {
        addToBucket(sums, (hour! - source.from) / source.per, n!, online!, playersN!, playersSum!, peak ?? null);
      }
    }
    return { server: { id: row.id, host: row.host, port: row.port, edition: row.edition }, sums };
  };
}
