/**
 * The SQLite store's worker thread: it owns the connection and runs every statement, so no
 * query, group commit, retention step or checkpoint ever runs on the event loop that serves
 * requests. It answers one request at a time, in the order they arrive (protocol.ts).
 */
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';
import { LRUCache } from 'lru-cache';
import type { SqliteConnection } from './binding.js';
import { createSqliteBatchWriter } from './batch-writer.js';
import {
  PROGRESS_WAIT_MS,
  type CheckpointResult,
  type QueryAnswer,
  type SqliteProgress,
  type SqliteRequest,
  type SqliteResponse,
  type SqliteWorkerData,
  type WorkerError,
} from './protocol.js';
import { createSqlitePruner, vacuumStep } from './retention.js';
import { configureConnection } from './connection.js';
import { createHistoryReader } from './history-reader.js';
import { beginCommit, isStopped, requestTag } from './commit-gate.js';
import { transactionRunner } from './transaction.js';
import { createWatchRunner } from './watch-ops.js';
import { createMigrationStepper } from './migrate-ops.js';

/** Prepared statements kept; the store uses a few dozen texts. */
const STATEMENT_CACHE_SIZE = 256;

type Statement = ReturnType<SqliteConnection['prepare']>;

const data = workerData as SqliteWorkerData;
const Database = createRequire(import.meta.url)(data.module) as new (path: string) => SqliteConnection;
let database: SqliteConnection;
try {
  database = configureConnection(new Database(data.path), data.role);
} catch (error) {
  // Answered as the start request's failure, so the store can name the file and the reason.
  parentPort!.postMessage({ id: 0, ok: false, error: asWorkerError(error) } satisfies SqliteResponse);
  parentPort!.close();
  throw error;
}
const statements = new LRUCache<string, Statement>({ max: STATEMENT_CACHE_SIZE });
// Made on first use: they prepare statements on the migrated schema.
let writeBatch: ReturnType<typeof createSqliteBatchWriter> | null = null;
let prune: ReturnType<typeof createSqlitePruner> | null = null;
let readHistory: ReturnType<typeof createHistoryReader> | null = null;
let watchRunner: ReturnType<typeof createWatchRunner> | null = null;
let migrationStepper: ReturnType<typeof createMigrationStepper> | null = null;

/** The tag (commit-gate.ts) of the request being handled. */
let tag = 0;
/**
 * Every transaction of the writer, the one way one is begun, committed or rolled back here:
 * just before it commits, it throws once the main thread stopped this worker.
 */
const runTransaction = transactionRunner(database, () => beginCommit(data.gate, tag));

function run(statement: Statement, params: readonly unknown[]): QueryAnswer {
  if (statement.reader) return { rows: statement.all(params) as Record<string, unknown>[] };
  const { changes, lastInsertRowid } = statement.run(params);
  return { rows: [], changes, lastInsertRowid: Number(lastInsertRowid) };
}

/** A single statement; on the writer a transaction of its own, since any statement may write. */
function query(sql: string, params: readonly unknown[]): QueryAnswer | Promise<QueryAnswer> {
  let statement = statements.get(sql);
  if (!statement) {
    statement = database.prepare(sql);
    statements.set(sql, statement);
  }
  if (data.role === 'reader') return run(statement, params);
  return runTransaction(() => run(statement, params));
}

/** A passive checkpoint: copies what it can without waiting for readers or the writer. */
function checkpoint(): CheckpointResult {
  // Read by name: libsql adds a field to the row.
  const row = database.prepare('PRAGMA wal_checkpoint(PASSIVE)').get() as { log: number; checkpointed: number } | undefined;
  return { frames: Math.max(0, Number(row?.log ?? 0)), copied: Math.max(0, Number(row?.checkpointed ?? 0)) };
}

function handle(id: number, request: SqliteRequest): unknown {
  switch (request.op) {
    case 'query':
      return query(request.sql, request.params);
    case 'batch':
      return (writeBatch ??= createSqliteBatchWriter(database, runTransaction))(request.batch);
    case 'prune':
      return (prune ??= createSqlitePruner(database, runTransaction))(request.step);
    case 'watch':
      return (watchRunner ??= createWatchRunner(database, runTransaction)).then((run) => run(request));
    case 'migrate': {
      const report = (event: unknown) => {
        Atomics.store(data.handled, 0, 0);
        parentPort!.postMessage({ id, event } satisfies SqliteProgress);
        Atomics.wait(data.handled, 0, 0, PROGRESS_WAIT_MS);
      };
      return (migrationStepper ??= createMigrationStepper(database, runTransaction)).then((step) => step(request, report));
    }
    case 'history':
      return (readHistory ??= createHistoryReader(database))(request);
    case 'vacuum':
      return vacuumStep(database, request.pages, runTransaction);
    case 'checkpoint':
      return checkpoint();
    case 'close':
      statements.clear();
      database.close();
      setImmediate(() => parentPort!.close());
      return null;
  }
}

function asWorkerError(error: unknown): WorkerError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const code = (error as { code?: unknown }).code;
  return { name: error.name, message: error.message, ...(typeof code === 'string' ? { code } : {}) };
}

/** Closes the connection (which rolls back a transaction left open) and ends the thread. */
function end(): void {
  if (!database.open) return;
  statements.clear();
  database.close();
  parentPort!.close();
}

async function answer({ id, request }: { id: number; request: SqliteRequest }): Promise<void> {
  // Stopped by the main thread, which failed this request: nothing more runs here.
  if (isStopped(data.gate)) return end();
  tag = requestTag(id);
  let response: SqliteResponse;
  try {
    response = { id, ok: true, value: await handle(id, request) };
  } catch (error) {
    response = { id, ok: false, error: asWorkerError(error) };
  }
  parentPort!.postMessage(response);
  // A transaction whose ROLLBACK failed is never met by the next request: the requests sent
  // meanwhile fail as the thread ends, and the next one starts a new thread.
  if (database.open && database.inTransaction) end();
}

// One request at a time, in order, a watch transaction or a migration's step (which await) included.
let answered: Promise<void> = Promise.resolve();
parentPort!.on('message', (message: { id: number; request: SqliteRequest }) => {
  answered = answered.then(() => answer(message));
});
parentPort!.postMessage({ id: 0, ok: true, value: 'ready' } satisfies SqliteResponse);
