/**
 * Retention on SQLite, run in the store's worker thread one short step at a time. The raw and
 * hourly tables are clustered by (server, time), so a server's old rows are one range at the
 * front of its part of the table: a step walks servers in sid order and deletes each one's
 * range, within a time budget, in one transaction. Between steps the connection serves
 * reads and group commits (the store releases it), so retention never holds either for long.
 */
import { performance } from 'node:perf_hooks';
import { pragmaValue, type SqliteConnection } from './binding.js';
import type { PruneStep, PruneStepResult } from './protocol.js';

/** Servers read per round of a step; a step goes on while its budget lasts. */
const SERVERS_PER_ROUND = 64;

export function createSqlitePruner(database: SqliteConnection): (step: PruneStep) => PruneStepResult {
  const next = database.prepare('SELECT sid, last_seen FROM servers WHERE sid > ? ORDER BY sid LIMIT ?');
  const checks = database.prepare('DELETE FROM checks WHERE server = ? AND checked_at < ?');
  const hours = database.prepare('DELETE FROM check_hours WHERE server = ? AND hour < ?');
  const server = database.prepare('DELETE FROM servers WHERE sid = ?');

  const run = database.transaction((step: PruneStep): PruneStepResult => {
    const result: PruneStepResult = { lastSid: step.afterSid, checks: 0, hours: 0, servers: 0 };
    const until = performance.now() + step.budgetMs;
    do {
      const rows = next.all(result.lastSid, SERVERS_PER_ROUND) as Array<{ sid: number; last_seen: number }>;
      for (const { sid, last_seen: lastSeen } of rows) {
        // A server not checked since serversBefore has no row left after its two ranges.
        const forget = lastSeen < step.serversBefore;
        result.checks += checks.run(sid, forget ? Number.MAX_SAFE_INTEGER : step.checksBefore).changes;
        result.hours += hours.run(sid, forget ? Number.MAX_SAFE_INTEGER : step.hoursBefore).changes;
        if (forget) result.servers += server.run(sid).changes;
      }
      if (rows.length < SERVERS_PER_ROUND) return { ...result, lastSid: null };
      result.lastSid = rows[rows.length - 1]!.sid;
    } while (performance.now() < until);
    return result;
  });
  return (step) => run.immediate(step);
}

/** Gives up to `pages` free pages back to the file system; returns how many stay free. */
export function vacuumStep(database: SqliteConnection, pages: number): number {
  // exec, not run(): the pragma frees one page per step of its statement.
  database.exec(`PRAGMA incremental_vacuum(${Math.max(1, Math.floor(pages))})`);
  return Number(pragmaValue(database, 'freelist_count'));
}
