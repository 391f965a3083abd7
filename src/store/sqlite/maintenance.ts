/**
 * Retention on SQLite from the main thread's side: it asks the writer for one short step at a
 * time (retention.ts), each holding it, and group commits waiting for it get it in between;
 * checkpoints come between steps as requests of their own (writer-work.ts). Then it gives the
 * pages retention freed back to the file system, a few at a time, and checkpoints, so the file
 * shrinks instead of keeping its largest size.
 */
import type { Maintenance, Removed, RetentionCutoffs } from '../maintenance.js';
import type { PruneStepResult } from './protocol.js';
import type { WriterRequests } from './writer-work.js';

/** Longest one retention step holds the connection. */
const STEP_MS = 10;
/** Pages (4 KiB) given back per step: each moves a page from the file's end into a free one. */
const VACUUM_PAGES = 64;

export function sqliteMaintenance(writer: WriterRequests): Maintenance {
  return {
    async run(cutoffs: RetentionCutoffs, _now: number, signal: AbortSignal): Promise<Removed> {
      const removed = { checks: 0, hours: 0, servers: 0, pages: 0 };
      let afterSid = 0;
      while (!signal.aborted) {
        const result = await writer.write<PruneStepResult>('retention_step', { op: 'prune', step: { afterSid, ...cutoffs, budgetMs: STEP_MS } });
        removed.checks += result.checks;
        removed.hours += result.hours;
        removed.servers += result.servers;
        if (result.lastSid === null) break;
        afterSid = result.lastSid;
      }
      // Until nothing is free, or a step frees nothing (a file without incremental auto-vacuum).
      for (let free = Number.POSITIVE_INFINITY; !signal.aborted; ) {
        const left = await writer.write<number>('vacuum_step', { op: 'vacuum', pages: VACUUM_PAGES });
        if (Number.isFinite(free)) removed.pages += Math.max(0, free - left);
        if (left === 0 || left >= free) break;
        free = left;
      }
      // The file is cut to its new size when the log is next copied into it.
      if (!signal.aborted) await writer.checkpoint();
      return removed;
    },
  };
}
