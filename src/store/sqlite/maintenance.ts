/**
 * Retention on SQLite from the main thread's side: it asks the writer for one short step at a
 * time (retention.ts), each holding it, and group commits waiting for it get it in between. Then it gives the pages retention freed back to the file system, a few at
 * a time, and checkpoints, so the file shrinks instead of keeping its largest size.
 */
import type { Maintenance, Removed, RetentionCutoffs } from '../maintenance.js';
import type { SqliteDialect } from './dialect.js';
import type { PruneStepResult, SqliteRequest } from './protocol.js';

/** Longest one retention step holds the connection. */
const STEP_MS = 10;
/** Pages (4 KiB) given back per step. */
const VACUUM_PAGES = 256;

export function sqliteMaintenance(withWriter: SqliteDialect['withWriter']): Maintenance {
  const step = <T>(request: SqliteRequest) => withWriter((writer) => writer.request(request)) as Promise<T>;
  return {
    async run(cutoffs: RetentionCutoffs, _now: number, signal: AbortSignal): Promise<Removed> {
      const removed = { checks: 0, hours: 0, servers: 0, pages: 0 };
      let afterSid = 0;
      while (!signal.aborted) {
        const result = await step<PruneStepResult>({ op: 'prune', step: { afterSid, ...cutoffs, budgetMs: STEP_MS } });
        removed.checks += result.checks;
        removed.hours += result.hours;
        removed.servers += result.servers;
        if (result.lastSid === null) break;
        afterSid = result.lastSid;
      }
      // Until nothing is free, or a step frees nothing (a file without incremental auto-vacuum).
      for (let free = Number.POSITIVE_INFINITY; !signal.aborted; ) {
        const left = await step<number>({ op: 'vacuum', pages: VACUUM_PAGES });
        if (Number.isFinite(free)) removed.pages += Math.max(0, free - left);
        if (left === 0 || left >= free) break;
        free = left;
      }
      // The file is cut to its new size when the log is next copied into it, which the writer
      // otherwise does only once a thousand pages of later commits fill the log.
      if (!signal.aborted) await step({ op: 'checkpoint' });
      return removed;
    },
  };
}
