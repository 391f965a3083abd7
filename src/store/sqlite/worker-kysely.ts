/**
 * Kysely inside the SQLite writer's thread, on the thread's own connection: the watch
 * operations (watch-ops.ts) and the schema migrations (migrate-ops.ts) run the same code here
 * as on PostgreSQL.
 *
 * Each statement runs at once on the connection. The thread runs one request at a time, so no
 * statement waits for another user of the connection, and one run while a transaction is open
 * is part of that transaction: a query through the database inside a transaction cannot wait
 * for it. Transactions are not Kysely's here: the shared code asks for one through a Transact
 * (transact.ts), which this thread answers with its runTransaction (transaction.ts), and
 * `db.transaction()` fails at once, saying so.
 */
import {
  CompiledQuery,
  Kysely,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
} from 'kysely';
import type { SqliteConnection } from './binding.js';

/** Kysely's own transaction asked for in the SQLite writer's thread. */
export class SqliteWorkerTransactionError extends Error {
  readonly code = 'SQLITE_WORKER_TRANSACTION';
  constructor() {
    super('transactions in the SQLite writer’s thread are its runTransaction’s: ask for one through the Transact the store was given, not db.transaction()');
    this.name = 'SqliteWorkerTransactionError';
  }
}

/** The thread's connection as Kysely sees it: a statement, prepared and run. */
class WriterConnection implements DatabaseConnection {
  constructor(private readonly database: SqliteConnection) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const statement = this.database.prepare(compiled.sql);
    if (statement.reader) return { rows: statement.all(compiled.parameters) as R[] };
    const { changes, lastInsertRowid } = statement.run(compiled.parameters);
    return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) };
  }

  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('the SQLite writer’s Kysely does not stream query results');
  }
}

class WriterDriver implements Driver {
  constructor(private readonly connection: WriterConnection) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return this.connection;
  }

  async beginTransaction(): Promise<void> {
    throw new SqliteWorkerTransactionError();
  }

  /** Never reached: no transaction was begun. */
  async commitTransaction(): Promise<void> {}

  /** Never reached: no transaction was begun. */
  async rollbackTransaction(): Promise<void> {}

  async releaseConnection(): Promise<void> {}

  /** The connection is the thread's: it outlives every Kysely made on it. */
  async destroy(): Promise<void> {}
}

/** A Kysely on the writer thread's connection. */
export function workerKysely<DB>(database: SqliteConnection): Kysely<DB> {
  const connection = new WriterConnection(database);
  return new Kysely<DB>({
    dialect: {
      createDriver: () => new WriterDriver(connection),
      createQueryCompiler: () => new SqliteQueryCompiler(),
      createAdapter: () => new SqliteAdapter(),
      createIntrospector: (db) => new SqliteIntrospector(db),
    },
  });
}
