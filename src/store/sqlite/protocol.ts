/**
 * The messages between the store (main thread) and its SQLite worker thread (worker.ts). The
 * worker owns its connection and answers one request at a time, in the order they came: each
 * request is one whole operation (a statement, a batch, a watch transaction, a migration's
 * step), so no transaction spans two requests.
 */
import type { WriteBatch } from '../history/write-queue.js';
import type { HistoryRequest } from './history-reader.js';
import type { MigrateRequest } from './migrate-ops.js';
import type { WatchRequest } from './watch-ops.js';

/** What the worker is started with. */
export interface SqliteWorkerData {
  /** The binding module to `require` (better-sqlite3 or libsql). */
  module: string;
  path: string;
  /** `writer`: sets the file up (WAL, auto-vacuum) and runs everything; `reader`: SELECTs only. */
  role: 'writer' | 'reader';
  /** Shared with the main thread: see commit-gate.ts. */
  gate: Int32Array;
  /** Shared with the main thread: set once it has handled the last SqliteProgress posted. */
  handled: Int32Array;
}

/** One maintenance step: retention over the servers after `afterSid`, for at most `budgetMs`. */
export interface PruneStep {
  afterSid: number;
  /** Raw checks before this time (ms) go. */
  checksBefore: number;
  /** Hourly rows before this hour (hours since the epoch) go. */
  hoursBefore: number;
  /** Servers whose latest check is before this time (ms) go, with their remaining rows. */
  serversBefore: number;
  budgetMs: number;
}

export interface PruneStepResult {
  /** The last server visited; null once every server was. */
  lastSid: number | null;
  checks: number;
  hours: number;
  servers: number;
  /** The most rows one of the step's DELETEs removed. */
  mostPerStatement: number;
  /** How long the step held the connection, its commit included (ms). */
  ms: number;
}

export type SqliteRequest =
  | { op: 'query'; sql: string; params: readonly unknown[] }
  | { op: 'batch'; batch: WriteBatch }
  /** One watch transaction, BEGIN to COMMIT (watch-ops.ts). */
  | ({ op: 'watch' } & WatchRequest)
  /** One step of the schema migrations: a transaction, or the work after a commit (migrate-ops.ts). */
  | ({ op: 'migrate' } & MigrateRequest)
  | { op: 'prune'; step: PruneStep }
  /** A server's history, summed by bucket (history-reader.ts). */
  | ({ op: 'history' } & HistoryRequest)
  /** Gives up to `pages` free pages back to the file system; answers the free pages left. */
  | { op: 'vacuum'; pages: number }
  /** Copies the write-ahead log into the file (and so cuts the file to its size): a passive checkpoint; answers a CheckpointResult. */
  | { op: 'checkpoint' }
  | { op: 'close' };

/** What a passive checkpoint found: frames in the write-ahead log, and how many of them are now in the file. */
export interface CheckpointResult {
  frames: number;
  copied: number;
}

export interface QueryAnswer {
  rows: Record<string, unknown>[];
  changes?: number;
  lastInsertRowid?: number;
}

/** An error as it crosses the thread boundary: SQLite's code (SQLITE_FULL, ...) kept. */
export interface WorkerError {
  name: string;
  message: string;
  code?: string;
}

export type SqliteResponse = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: WorkerError };

/**
 * Something a request reports while it runs (a migration's statement), before its answer. The
 * worker waits until the main thread has handled it (the service logs each statement before
 * the next one runs), for at most PROGRESS_WAIT_MS.
 */
export interface SqliteProgress {
  id: number;
  event: unknown;
}

/** Longest the worker waits for the main thread to handle a SqliteProgress. */
export const PROGRESS_WAIT_MS = 1_000;
