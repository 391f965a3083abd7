/**
 * The SQLite writer's units of work as the main thread sends them (group commits, retention
 * and vacuum steps, checkpoints), timed from request to answer: what a group commit waiting
 * for the writer sees. And when the writer copies its write-ahead log into the database file.
 *
 * Left to itself, SQLite checkpoints inside the commit that takes the log past
 * `wal_autocheckpoint` pages, so that one group commit or retention step would carry the copy
 * of every page written since the last checkpoint. Instead the store asks for a passive
 * checkpoint, a request of its own, every few writes: no commit or step includes it, and each
 * copies about CHECKPOINT_FRAMES pages. How many pages a write adds to the log depends on the
 * write (a group commit of a few checks, a retention step over scattered servers, a vacuum
 * step), so the number of writes between two checkpoints follows what the last one found: it
 * halves when the log held more than CHECKPOINT_FRAMES pages, and doubles, up to
 * MOST_WRITES_PER_CHECKPOINT, when it held less than half of them. (While a reader keeps the
 * log from starting over, a backup copy say, it keeps its frames, and checkpoints come after
 * every write; each copies only what the reader's snapshot lets it.) The connection's own
 * checkpoint stays as a backstop for a log that grows by writes nothing here counts
 * (connection.ts).
 */
import { performance } from 'node:perf_hooks';
import type { CheckpointResult, PruneStepResult, SqliteRequest } from './protocol.js';
import type { SqliteWorker } from './worker-client.js';

/** Pages (4 KiB) of log a checkpoint should copy at most. */
export const CHECKPOINT_FRAMES = 512;
/** Most writes (group commits, retention and vacuum steps) between two checkpoints. */
export const MOST_WRITES_PER_CHECKPOINT = 16;

export type WriterWorkKind = 'batch' | 'retention_step' | 'vacuum_step' | 'checkpoint';

/** One unit of the writer's work, done; `ms` from request to answer on the main thread. */
export interface WriterWork {
  kind: WriterWorkKind;
  ms: number;
  /** A checkpoint's: frames in the log, and frames copied into the file. */
  checkpoint?: CheckpointResult;
  /** A retention step's result: rows removed, and how long it held the connection in the writer's thread. */
  step?: PruneStepResult;
}

export interface WriterRequests {
  /** Sends a write to the writer, then a checkpoint if this write is the n-th since the last. */
  write<T>(kind: Exclude<WriterWorkKind, 'checkpoint'>, request: SqliteRequest): Promise<T>;
  /** A passive checkpoint now; a failure is left to the next one (the backstop bounds the log meanwhile). */
  checkpoint(): Promise<void>;
}

export function writerRequests(writer: SqliteWorker, observe: (work: WriterWork) => void = () => {}): WriterRequests {
  let writes = 0;
  let every = MOST_WRITES_PER_CHECKPOINT;
  const timed = async <T>(kind: WriterWorkKind, request: SqliteRequest): Promise<T> => {
    const started = performance.now();
    const value = (await writer.request(request)) as T;
    const work: WriterWork = { kind, ms: performance.now() - started };
    if (kind === 'checkpoint') work.checkpoint = value as CheckpointResult;
    if (kind === 'retention_step') work.step = value as PruneStepResult;
    observe(work);
    return value;
  };
  const checkpoint = async () => {
    writes = 0;
    const found = await timed<CheckpointResult>('checkpoint', { op: 'checkpoint' }).catch(() => null);
    if (found && found.frames > CHECKPOINT_FRAMES) every = Math.max(1, every >> 1);
    else if (found && found.frames < CHECKPOINT_FRAMES / 2) every = Math.min(MOST_WRITES_PER_CHECKPOINT, every * 2);
  };
  return {
    async write<T>(kind: Exclude<WriterWorkKind, 'checkpoint'>, request: SqliteRequest): Promise<T> {
      const value = await timed<T>(kind, request);
      if (++writes >= every) await checkpoint();
      return value;
    },
    checkpoint,
  };
}
