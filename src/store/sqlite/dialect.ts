/**
 * SQLite for Kysely through the store's worker threads (worker.ts): Kysely builds and compiles
 * single statements on the main thread; the workers prepare and run them, one message each.
 *
 * Two connections on one file, each in a thread of its own. The writer runs every statement
 * that writes, the group commits, retention, the watch transactions and the migrations, one
 * request at a time in the order they came (its queue is what serialises the writes). The
 * reader runs the SELECTs: in WAL mode it never waits for the writer, and it sees every commit
 * that finished before the query was sent, so what a flush wrote is read back at once. The
 * reader's thread starts with the first such SELECT after `openReads()` (the store calls it
 * once migrated); until it is up, the writer runs them, so that no read waits for a thread to
 * start. During an upgrade, the reads of the previous layout go to the reader from the first
 * one (`readsDialect`), so that none waits for a step of the copy.
 *
 * No transaction is opened from the main thread: one that spanned several messages could
 * outlive the thread it began on, or interleave with the group commits. An operation that
 * needs one is sent whole to the writer (watch-ops.ts, migrate-ops.ts, the batch writer), and
 * `db.transaction()` here fails at once saying so.
 */
import {
  CompiledQuery,
  Kysely,
  SelectQueryNode,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type Driver,
  type QueryResult,
} from 'kysely';
import type { QueryAnswer } from './protocol.js';
import type { SqliteWorker } from './worker-client.js';

/** A transaction asked of the SQLite store from the main thread. */
export class SqliteMainThreadTransactionError extends Error {
  readonly code = 'SQLITE_MAIN_THREAD_TRANSACTION';
  constructor() {
    super(
      'transactions on SQLite run whole inside the store’s writer thread: send the operation to it as one request (as the watch transactions, batches and migrations are), not db.transaction() from the main thread',
    );
    this.name = 'SqliteMainThreadTransactionError';
  }
}

async function run<R>(worker: SqliteWorker, compiled: CompiledQuery): Promise<QueryResult<R>> {
  const answer = (await worker.request({ op: 'query', sql: compiled.sql, params: compiled.parameters })) as QueryAnswer;
  return {
    rows: answer.rows as R[],
    ...(answer.changes === undefined ? {} : { numAffectedRows: BigInt(answer.changes) }),
    ...(answer.lastInsertRowid === undefined ? {} : { insertId: BigInt(answer.lastInsertRowid) }),
  };
}

/**
 * Sends each statement to the reader (a SELECT, once reads may go there) or the writer. With
 * `readsOnly` every statement is a read, and goes to the reader.
 */
class RoutedConnection implements DatabaseConnection {
  constructor(
    private readonly stores: SqliteStores,
    private readonly readsOnly: boolean,
  ) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    if (this.readsOnly || SelectQueryNode.is(compiled.query)) {
      const reader = readerNow(this.stores, this.readsOnly);
      if (reader) return run<R>(reader, compiled);
    }
    return run<R>(this.stores.writer, compiled);
  }

  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('the SQLite store does not stream query results');
  }
}

class WorkerDriver implements Driver {
  private readonly connection: RoutedConnection;

  constructor(
    private readonly stores: SqliteStores,
    private readonly readsOnly: boolean,
  ) {
    this.connection = new RoutedConnection(stores, readsOnly);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return this.connection;
  }

  async beginTransaction(): Promise<void> {
    throw new SqliteMainThreadTransactionError();
  }

  async commitTransaction(): Promise<void> {}

  /** Nothing to roll back: no transaction was begun. */
  async rollbackTransaction(): Promise<void> {}

  async releaseConnection(): Promise<void> {}

  /** The threads end with the store's own Kysely; one for reads only leaves them to it. */
  async destroy(): Promise<void> {
    if (this.readsOnly) return;
    await this.stores.reader.close();
    await this.stores.writer.close();
  }
}

/**
 * The reader, when reads may go to it and its thread is up; otherwise null (the writer runs
 * the read), having started the reader's thread if reads may go to it. With `always` (the
 * previous layout's reads) the reader whatever the schema, once its thread has started: a
 * read on the writer would wait for a step of the copy, which takes longer.
 */
function readerNow(stores: SqliteStores, always = false): SqliteWorker | null {
  const { reader, writer, readsOpen } = stores;
  if (reader === writer) return null;
  if (always) return reader;
  if (!readsOpen) return null;
  if (reader.up) return reader;
  reader.warm();
  return null;
}

/** The two connections, and whether reads go to the reader yet. */
interface SqliteStores {
  writer: SqliteWorker;
  reader: SqliteWorker;
  readsOpen: boolean;
}

export interface SqliteDialect {
  dialect: Dialect;
  /**
   * Every statement a read, on the reader from the start: the reads of the previous layout
   * during an upgrade, which must not wait for the copy's steps on the writer.
   */
  readsDialect: Dialect;
  /** From now on, SELECTs go to the reader. */
  openReads(): void;
  /** Runs a read (a history's sums) on the reader once it is up, on the writer until then; `always`: on the reader, whatever the schema. */
  read<T>(work: (worker: SqliteWorker) => Promise<T>, always?: boolean): Promise<T>;
}

export function createSqliteDialect(writer: SqliteWorker, reader: SqliteWorker = writer): SqliteDialect {
  const stores: SqliteStores = { writer, reader, readsOpen: false };
  const dialect = (readsOnly: boolean): Dialect => ({
    createDriver: () => new WorkerDriver(stores, readsOnly),
    createQueryCompiler: () => new SqliteQueryCompiler(),
    createAdapter: () => new SqliteAdapter(),
    createIntrospector: (db: Kysely<unknown>): DatabaseIntrospector => new SqliteIntrospector(db),
  });
  return {
    dialect: dialect(false),
    readsDialect: dialect(true),
    openReads: () => {
      stores.readsOpen = true;
    },
    read: (work, always) => work(readerNow(stores, always) ?? writer),
  };
}
