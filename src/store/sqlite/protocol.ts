/**
 * The messages between the store (main thread) and its SQLite worker thread (worker.ts). The
 * worker owns the one connection; the main thread sends it one request at a time per
 * connection holder (the Kysely driver's lock) and waits for the answer.
 */
import type { WriteBatch } from '../write-queue.js';
import type { HistoryRequest } from './history-reader.js';
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
