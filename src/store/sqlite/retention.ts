/**
 * Retention on SQLite, run in the store's worker thread one short step at a time. The raw and
 * hourly tables are clustered by (server, time), so a server's old rows are one range at the
 * front of its part of the table: a step walks servers in sid order and deletes each one's
 * range in one transaction, at most ROWS_PER_STATEMENT rows a statement and ROWS_PER_STEP a
 * step, and ends early once its time budget is spent; a step that ends inside a server's range
 * leaves the rest to the next. Between steps the connection serves reads and group commits (the
 * store releases it), so retention never holds either for long, whatever the backlog.
 */
import { performance } from 'node:perf_hooks';
import { pragmaValue, type SqliteConnection } from './binding.js';
import type { PruneStep, PruneStepResult } from './protocol.js';
import type { RunTransaction } from './transaction.js';

/** Servers read per round of a step; a step goes on while its budget lasts. */
const SERVERS_PER_ROUND = 64;
/** Rows one DELETE removes at most. */
export const ROWS_PER_STATEMENT = 500;
/** Rows one step removes at most. */
export const ROWS_PER_STEP = 2_000;

/**
 * Deletes the oldest rows of a server before a cutoff, at most @limit of them: those before the
 * (@limit + 1)-th oldest such row, or all of them when there are no more than @limit.
 */
function boundedDelete(table: 'checks' | 'check_hours', time: 'checked_at' | 'hour'): string {
  return `DELETE FROM ${table} WHERE server = @server AND ${time} < coalesce(
    (SELECT ${time} FROM ${table} WHERE server = @server AND ${time} < @before ORDER BY ${time} LIMIT 1 OFFSET @limit), @before)`;
}

/** A retention step, one transaction: all it removes, or nothing. */
export function createSqlitePruner(database: SqliteConnection, runTransaction: RunTransaction): (step: PruneStep) => Promise<PruneStepResult> {
  const next = database.prepare('SELECT sid, last_seen FROM servers WHERE sid > ? ORDER BY sid LIMIT ?');
  const checks = database.prepare(boundedDelete('checks', 'checked_at'));
  const hours = database.prepare(boundedDelete('check_hours', 'hour'));
  const server = database.prepare('DELETE FROM servers WHERE sid = ?');

  const run = (step: PruneStep): PruneStepResult => {
    const result: PruneStepResult = { lastSid: step.afterSid, checks: 0, hours: 0, servers: 0, mostPerStatement: 0, ms: 0 };
    const until = performance.now() + step.budgetMs;
    let removed = 0;
    const spent = () => removed >= ROWS_PER_STEP || performance.now() >= until;
    /** Deletes a range a statement at a time; false when the step ended before the range did. */
    const range = (statement: typeof checks, sid: number, before: number, kind: 'checks' | 'hours'): boolean => {
      for (;;) {
        const limit = Math.min(ROWS_PER_STATEMENT, ROWS_PER_STEP - removed);
        const n = statement.run({ server: sid, before, limit }).changes;
        removed += n;
        result[kind] += n;
        result.mostPerStatement = Math.max(result.mostPerStatement, n);
        if (n < limit) return true;
        if (spent()) return false;
      }
    };
    for (;;) {
      const rows = next.all(result.lastSid, SERVERS_PER_ROUND) as Array<{ sid: number; last_seen: number }>;
      for (const { sid, last_seen: lastSeen } of rows) {
        // A server not checked since serversBefore has no row left after its two ranges.
        const forget = lastSeen < step.serversBefore;
        const done =
          range(checks, sid, forget ? Number.MAX_SAFE_INTEGER : step.checksBefore, 'checks') &&
          range(hours, sid, forget ? Number.MAX_SAFE_INTEGER : step.hoursBefore, 'hours');
        if (!done) {
          // The next step starts at this server again.
          result.lastSid = sid - 1;
          return result;
        }
        if (forget) result.servers += server.run(sid).changes;
        result.lastSid = sid;
        if (spent()) return result;
      }
      if (rows.length < SERVERS_PER_ROUND) return { ...result, lastSid: null };
    }
  };
  return async (step) => {
    const started = performance.now();
    const result = await runTransaction(() => run(step));
    return { ...result, ms: performance.now() - started };
  };
}

/** Gives up to `pages` free pages back to the file system; returns how many stay free. */
export async function vacuumStep(database: SqliteConnection, pages: number, runTransaction: RunTransaction): Promise<number> {
  // exec, not run(): the pragma frees one page per step of its statement.
  await runTransaction(() => {
    database.exec(`PRAGMA incremental_vacuum(${Math.max(1, Math.floor(pages))})`);
  });
  return Number(pragmaValue(database, 'freelist_count'));
}
