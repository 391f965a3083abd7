/**
 * SQLite for Kysely through the store's worker thread (worker.ts): Kysely builds and compiles
 * queries on the main thread; the worker prepares and runs them. As with Kysely's own SQLite
 * driver there is one connection, held by one user at a time (a transaction holds it from
 * BEGIN to COMMIT); waiting users get it in the order they asked, so a long series of
 * maintenance steps cannot keep reads and writes out.
 */
import {
  CompiledQuery,
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
}

class WorkerConnection implements DatabaseConnection {
  constructor(private readonly worker: SqliteWorker) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const answer = (await this.worker.request({ op: 'query', sql: compiled.sql, params: compiled.parameters })) as QueryAnswer;
    return {
      rows: answer.rows as R[],
      ...(answer.changes === undefined ? {} : { numAffectedRows: BigInt(answer.changes) }),
      ...(answer.lastInsertRowid === undefined ? {} : { insertId: BigInt(answer.lastInsertRowid) }),
    };
  }

  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('the SQLite store does not stream query results');
  }
}

class WorkerDriver implements Driver {
  private readonly lock = new FairLock();
  private readonly connection: WorkerConnection;

  constructor(private readonly worker: SqliteWorker) {
    this.connection = new WorkerConnection(worker);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    await this.lock.lock();
    return this.connection;
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async releaseConnection(): Promise<void> {
    this.lock.unlock();
  }

  async destroy(): Promise<void> {
    await this.worker.close();
  }
}

export function createSqliteDialect(worker: SqliteWorker): Dialect {
  return {
    createDriver: () => new WorkerDriver(worker),
    createQueryCompiler: () => new SqliteQueryCompiler(),
    createAdapter: () => new SqliteAdapter(),
    createIntrospector: (db: Kysely<unknown>): DatabaseIntrospector => new SqliteIntrospector(db),
  };
}
