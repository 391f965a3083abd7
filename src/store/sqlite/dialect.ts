/**
 * SQLite for Kysely through the store's worker threads (worker.ts): Kysely builds and compiles
 * queries on the main thread; the workers prepare and run them.
 *
 * Two connections on one file, each in a thread of its own. The writer runs every statement
 * that writes, every transaction, the group commits and retention; one user holds it at a time
 * (a transaction from BEGIN to COMMIT), and waiting users get it in the order they asked, so a
 * series of retention steps cannot keep the others out. The reader runs the SELECTs issued
 * outside a transaction: in WAL mode it never waits for the writer, and it sees every commit
 * that finished before the query was sent, so what a flush wrote is read back at once. The
 * reader's thread starts with the first such SELECT after `openReads()` (the store calls it once
 * migrated); until it is up, the writer runs them, so that no read waits for a thread to start.
 */
import {
  CompiledQuery,
  SelectQueryNode,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
} from 'kysely';
import type { QueryAnswer } from './protocol.js';
import type { SqliteWorker } from './worker-client.js';

/** A first-come, first-served lock. */
class FairLock {
  private held = false;
  private readonly waiting: Array<() => void> = [];

  async lock(): Promise<void> {
    if (!this.held) {
      this.held = true;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  unlock(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held = false;
  }

  /** Runs `work` holding the lock. */
  async with<T>(work: () => Promise<T>): Promise<T> {
    await this.lock();
    try {
      return await work();
    } finally {
      this.unlock();
    }
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
 * One acquisition of the connection by Kysely: a query, or a transaction. It takes the writer's
 * lock only when it needs the writer, and keeps it until released.
 */
class RoutedConnection implements DatabaseConnection {
  inTransaction = false;
  private holding = false;

  constructor(private readonly stores: SqliteStores) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    if (!this.inTransaction && SelectQueryNode.is(compiled.query)) {
      const reader = readerNow(this.stores);
      if (reader) return run<R>(reader, compiled);
    }
    await this.holdWriter();
    return run<R>(this.stores.writer, compiled);
  }

  async holdWriter(): Promise<void> {
    if (this.holding) return;
    await this.stores.lock.lock();
    this.holding = true;
  }

  release(): void {
    if (this.holding) this.stores.lock.unlock();
    this.holding = false;
  }

  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('the SQLite store does not stream query results');
  }
}

class WorkerDriver implements Driver {
  constructor(private readonly stores: SqliteStores) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return new RoutedConnection(this.stores);
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    (connection as RoutedConnection).inTransaction = true;
    await connection.executeQuery(CompiledQuery.raw('begin'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as RoutedConnection).release();
  }

  async destroy(): Promise<void> {
    await this.stores.reader.close();
    await this.stores.writer.close();
  }
}

/**
 * The reader, when reads may go to it and its thread is up; otherwise null (the writer runs
 * the read), having started the reader's thread if reads may go to it.
 */
function readerNow(stores: SqliteStores): SqliteWorker | null {
  const { reader, writer, readsOpen } = stores;
  if (!readsOpen || reader === writer) return null;
  if (reader.up) return reader;
  reader.warm();
  return null;
}

/** The two connections, the writer's lock, and whether reads go to the reader yet. */
export interface SqliteStores {
  writer: SqliteWorker;
  reader: SqliteWorker;
  lock: FairLock;
  readsOpen: boolean;
}

export interface SqliteDialect {
  dialect: Dialect;
  /** Runs `work` (a batch, a retention step) holding the writer, between Kysely's users of it. */
  withWriter<T>(work: (writer: SqliteWorker) => Promise<T>): Promise<T>;
  /** From now on, reads outside a transaction go to the reader. */
  openReads(): void;
  /** Runs a read (a history's sums) on the reader once it is up, on the writer until then. */
  read<T>(work: (worker: SqliteWorker) => Promise<T>): Promise<T>;
}

export function createSqliteDialect(writer: SqliteWorker, reader: SqliteWorker = writer): SqliteDialect {
  const stores: SqliteStores = { writer, reader, lock: new FairLock(), readsOpen: false };
  return {
    dialect: {
      createDriver: () => new WorkerDriver(stores),
      createQueryCompiler: () => new SqliteQueryCompiler(),
      createAdapter: () => new SqliteAdapter(),
      createIntrospector: (db: Kysely<unknown>): DatabaseIntrospector => new SqliteIntrospector(db),
    },
    withWriter: (work) => stores.lock.with(() => work(writer)),
    openReads: () => {
      stores.readsOpen = true;
    },
    read: (work) => {
      const reader = readerNow(stores);
      return reader ? work(reader) : stores.lock.with(() => work(writer));
    },
  };
}
