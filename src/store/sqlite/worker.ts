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
import type { QueryAnswer, SqliteRequest, SqliteResponse, SqliteWorkerData, WorkerError } from './protocol.js';
import { createSqlitePruner, vacuumStep } from './retention.js';
import { configureConnection } from './connection.js';
import { createHistoryReader } from './history-reader.js';
import { beginCommit, COMMIT_STATEMENT, DATA_CHANGE_STATEMENT, isStopped, requestTag } from './commit-gate.js';
import { answerWithoutWatches, createWatchRunner } from './watch-ops.js';

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
let withoutWatches: ReturnType<typeof answerWithoutWatches> | null = null;

/** The tag (commit-gate.ts) of the request being handled. */
let tag = 0;
/** Called by every transaction of the writer just before it commits: throws once the main thread stopped this worker. */
const beforeCommit = () => beginCommit(data.gate, tag);


function run(statement: Statement, params: readonly unknown[]): QueryAnswer {
  if (statement.reader) return { rows: statement.all(params) as Record<string, unknown>[] };
  const { changes, lastInsertRowid } = statement.run(params);
  return { rows: [], changes, lastInsertRowid: Number(lastInsertRowid) };
}

/** A change in autocommit, run in a transaction of its own so that its commit passes the gate. */
const runGated = database.transaction((statement: Statement, params: readonly unknown[]) => {
  const answer = run(statement, params);
  beforeCommit();
  return answer;
});

function query(sql: string, params: readonly unknown[]): QueryAnswer {
  let statement = statements.get(sql);
  if (!statement) {
    statement = database.prepare(sql);
    statements.set(sql, statement);
  }
  if (data.role === 'reader') return run(statement, params);
  if (database.inTransaction) {
    if (COMMIT_STATEMENT.test(sql)) beforeCommit();
    return run(statement, params);
  }
  return DATA_CHANGE_STATEMENT.test(sql) ? runGated(statement, params) : run(statement, params);
}

function handle(request: SqliteRequest): unknown {
  switch (request.op) {
    case 'query':
      return query(request.sql, request.params);
    case 'batch':
      return (writeBatch ??= createSqliteBatchWriter(database, beforeCommit))(request.batch);
    case 'prune':
      return (prune ??= createSqlitePruner(database, beforeCommit))(request.step);
    case 'watch': {
      const quick = watchRunner === null ? (withoutWatches ??= answerWithoutWatches(database))(request) : null;
      if (quick) return quick.answer;
      return (watchRunner ??= createWatchRunner(database, beforeCommit)).then((run) => run(request));
    }
    case 'history':
      return (readHistory ??= createHistoryReader(database))(request);
    case 'vacuum':
      return vacuumStep(database, request.pages, beforeCommit);
    case 'checkpoint':
      database.pragma('wal_checkpoint(PASSIVE)');
      return null;
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

async function answer({ id, request }: { id: number; request: SqliteRequest }): Promise<void> {
  if (isStopped(data.gate)) {
    // Stopped by the main thread, which failed this request: nothing more runs here. Closing
    // rolls back a transaction left open.
    if (database.open) {
      statements.clear();
      database.close();
      parentPort!.close();
    }
    return;
  }
  tag = requestTag(id);
  let response: SqliteResponse;
  try {
    response = { id, ok: true, value: await handle(request) };
  } catch (error) {
    response = { id, ok: false, error: asWorkerError(error) };
  }
  parentPort!.postMessage(response);
}

// One request at a time, in order, a watch transaction (which awaits) included.
let answered: Promise<void> = Promise.resolve();
parentPort!.on('message', (message: { id: number; request: SqliteRequest }) => {
  answered = answered.then(() => answer(message));
});
parentPort!.postMessage({ id: 0, ok: true, value: 'ready' } satisfies SqliteResponse);
