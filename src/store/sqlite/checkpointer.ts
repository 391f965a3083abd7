/**
 * WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside whichever
 * commit pushes the log past 1000 pages: it copies the log into the database file and syncs
 * it, in that commit, on the main thread, where it is a large share of the group commit's cost
 * and can hold the event loop for many milliseconds, during which no request is served
 * (docs/performance.md).
 *
 * So a worker thread with its own connection checkpoints the file every `intervalMs`, and the
 * service's connection stops checkpointing by itself (`wal_autocheckpoint = 0`) only once the
 * worker runs. A PASSIVE checkpoint never waits for the writer or the readers; the next commit
 * after a complete one starts the log over, so the log stays as small as with automatic
 * checkpoints. Should the worker fail or exit, the connection checkpoints by itself again.
 * Commits stay on the main thread (the group commit's transaction), so a SIGKILL loses at most
 * one commit window, with the worker or without it.
 */
import { Worker } from 'node:worker_threads';
import { pragmaValue, sqliteBinding, type SqliteConnection } from './binding.js';

/** SQLite's default `wal_autocheckpoint`, in pages, restored when the worker is gone. */
const AUTOCHECKPOINT_PAGES = 1000;
/** How long a stop waits for the worker's own exit before terminating it. */
const STOP_TIMEOUT_MS = 2000;

/** The worker, as CommonJS source (an eval worker): it runs the same under tsx, vitest and dist/. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
if (!require('node:fs').existsSync(workerData.path)) throw new Error('no database file at ' + workerData.path);
const db = new Database(workerData.path);
const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (error) {
    parentPort.postMessage({ error: error instanceof Error ? error.message : String(error) });
  }
}, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
parentPort.postMessage('ready');
`;

export interface Checkpointer {
  /** Resolves true once the worker checkpoints for the connection, false if it could not start. */
  readonly ready: Promise<boolean>;
  /** Stops the worker; the connection checkpoints by itself again. */
  stop(): Promise<void>;
}

export interface CheckpointerOptions {
  /** Between two checkpoints (default 1000 ms). */
  intervalMs?: number;
  /** The first failure of the worker, and a checkpoint that failed (once). */
  onError?: (error: unknown) => void;
  /** The binding module the worker loads (default: the one this process uses); a seam for tests. */
  module?: string;
}

/**
 * Starts checkpointing `path` (the file `database` is open on) from a worker thread. Returns
 * null where there is nothing to checkpoint (an in-memory database, a journal mode other than WAL).
 */
export function startCheckpointer(database: SqliteConnection, path: string, options: CheckpointerOptions = {}): Checkpointer | null {
  if (database.memory || pragmaValue(database, 'journal_mode') !== 'wal') return null;
  const onError = options.onError ?? (() => {});
  let reported = false;
  const report = (error: unknown) => {
    if (reported) return;
    reported = true;
    onError(error);
  };
  const autocheckpoint = (pages: number) => {
    if (database.open) database.pragma(`wal_autocheckpoint = ${pages}`);
  };

  let stopping = false;
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: {
      module: options.module ?? sqliteBinding().modulePath,
      path,
      intervalMs: options.intervalMs ?? 1000,
    },
  });
  // Never keeps the process alive by itself.
  worker.unref();
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  const ready = new Promise<boolean>((resolve) => {
    worker.on('message', (message: unknown) => {
      if (message === 'ready') {
        if (!stopping) autocheckpoint(0);
        resolve(true);
      } else if (typeof message === 'object' && message !== null && 'error' in message) {
        report(new Error(`WAL checkpoint failed: ${String(message.error)}`));
      }
    });
    // 'exit' follows 'error', and gives checkpoints back to the connection.
    worker.on('error', report);
    worker.on('exit', () => {
      autocheckpoint(AUTOCHECKPOINT_PAGES);
      if (!stopping) report(new Error('the WAL checkpoint worker exited; checkpoints are back on the main thread'));
      resolve(false);
    });
  });

  return {
    ready,
    async stop() {
      if (stopping) return;
      stopping = true;
      autocheckpoint(AUTOCHECKPOINT_PAGES);
      worker.postMessage('stop');
      const timer = setTimeout(() => void worker.terminate(), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}
