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
 *
 * A transaction belongs to the writer's thread it began on: should that thread stop, the rest
 * of the transaction fails (SQLite rolled it back) rather than run in autocommit on the next
 * thread, and the caller sees the error that stopped it. A query through the database (not the
 * transaction) inside a transaction's callback would wait forever for the writer the
 * transaction holds: it throws instead (see `kysely()`).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  CompiledQuery,
  Kysely,
  TransactionBuilder,
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
import type { RequestOptions, SqliteWorker } from './worker-client.js';

/** Longest a statement may run before the schema is migrated: a migration copies whole tables. */
const MIGRATION_DEADLINE_MS = 60 * 60_000;

/** A query through the database inside one of its transactions on SQLite. */
export class SqliteReentrantUseError extends Error {
  readonly code = 'SQLITE_REENTRANT_USE';
  constructor() {
    super(
      'a query through the database inside one of its transactions would wait forever for the SQLite writer that transaction holds: use the transaction (trx), not the database',
    );
    this.name = 'SqliteReentrantUseError';
  }
}

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

async function run<R>(worker: SqliteWorker, compiled: CompiledQuery, options: RequestOptions): Promise<QueryResult<R>> {
  const answer = (await worker.request({ op: 'query', sql: compiled.sql, params: compiled.parameters }, options)) as QueryAnswer;
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
  /** The generation of the writer's thread the open transaction began on; null: none open. */
  private transaction: number | null = null;
  private holding = false;

  constructor(private readonly stores: SqliteStores) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const { stores } = this;
    const deadline = { deadlineMs: stores.readsOpen ? stores.writer.deadlineMs : MIGRATION_DEADLINE_MS };
    if (this.transaction === null) {
      if (stores.scope.getStore()?.open) throw new SqliteReentrantUseError();
      if (SelectQueryNode.is(compiled.query)) {
        const reader = readerNow(stores);
        if (reader) return run<R>(reader, compiled, deadline);
      }
    }
    await this.holdWriter();
    return run<R>(stores.writer, compiled, this.transaction === null ? deadline : { ...deadline, generation: this.transaction });
  }

  /** Begins a transaction on the writer's current thread, and binds the connection to it. */
  async begin(): Promise<void> {
    await this.holdWriter();
    this.transaction = await this.stores.writer.generation();
    await this.executeQuery(CompiledQuery.raw('begin'));
  }

  /** Rolls back, unless the thread the transaction began on is gone: SQLite rolled it back then. */
  async rollback(): Promise<void> {
    const generation = this.transaction;
    if (generation === null || this.stores.writer.running !== generation) return;
    await this.executeQuery(CompiledQuery.raw('rollback'));
  }

  ended(): void {
    this.transaction = null;
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
    await (connection as RoutedConnection).begin();
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
    (connection as RoutedConnection).ended();
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await (connection as RoutedConnection).rollback();
    } finally {
      (connection as RoutedConnection).ended();
    }
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as RoutedConnection).ended();
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

/** Marks the code a transaction's callback runs (and what it starts) while the transaction is open. */
interface TransactionScope {
  open: boolean;
}

/** The two connections, the writer's lock, whether reads go to the reader yet, and the transactions' scope. */
export interface SqliteStores {
  writer: SqliteWorker;
  reader: SqliteWorker;
  lock: FairLock;
  readsOpen: boolean;
  scope: AsyncLocalStorage<TransactionScope>;
}

export interface SqliteDialect {
  dialect: Dialect;
  /** Runs `work` (a batch, a retention step) holding the writer, between Kysely's users of it. */
  withWriter<T>(work: (writer: SqliteWorker) => Promise<T>): Promise<T>;
  /** From now on, reads outside a transaction go to the reader. */
  openReads(): void;
  /** Runs a read (a history's sums) on the reader once it is up, on the writer until then. */
  read<T>(work: (worker: SqliteWorker) => Promise<T>): Promise<T>;
  /** A Kysely on this dialect whose transactions detect re-entrant use (`SqliteReentrantUseError`). */
  kysely<DB>(): Kysely<DB>;
}

/** Wraps a transaction builder so that its callback runs in an open `scope`, closed when the transaction ends. */
function scoped<DB>(builder: TransactionBuilder<DB>, scope: AsyncLocalStorage<TransactionScope>): TransactionBuilder<DB> {
  return new Proxy(builder, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (property === 'execute') {
        return <T>(callback: (trx: Parameters<Parameters<TransactionBuilder<DB>['execute']>[0]>[0]) => Promise<T>) => {
          const mark: TransactionScope = { open: true };
          return target.execute((trx) => scope.run(mark, () => callback(trx))).finally(() => {
            mark.open = false;
          });
        };
      }
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        return result instanceof TransactionBuilder ? scoped(result as TransactionBuilder<DB>, scope) : result;
      };
    },
  });
}

export function createSqliteDialect(writer: SqliteWorker, reader: SqliteWorker = writer): SqliteDialect {
  const stores: SqliteStores = { writer, reader, lock: new FairLock(), readsOpen: false, scope: new AsyncLocalStorage() };
  const sqlite: SqliteDialect = {
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
    kysely<DB>() {
      const db = new Kysely<DB>({ dialect: sqlite.dialect });
      const transaction = db.transaction.bind(db);
      db.transaction = () => scoped(transaction(), stores.scope);
      return db;
    },
  };
  return sqlite;
}
