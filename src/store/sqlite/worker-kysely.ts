/**
 * Kysely inside the SQLite writer's thread, on the thread's own connection, with Kysely's
 * stock SQLite dialect: the watch transactions (watch-ops.ts) and the schema migrations
 * (migrate-ops.ts) run the same code here as on PostgreSQL, BEGIN to COMMIT within one request.
 *
 * Two guards:
 * - every statement that commits passes the commit gate first (commit-gate.ts), so that a
 *   worker the main thread stopped commits nothing more;
 * - Kysely's SQLite driver hands its one connection to one user at a time, and a transaction
 *   holds it until it ends: a query through the database (not the transaction) inside the
 *   transaction's callback would wait for it forever. It throws SqliteReentrantUseError instead.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Kysely, SqliteDialect, Transaction, TransactionBuilder, type Driver } from 'kysely';
import type { SqliteConnection } from './binding.js';
import { COMMIT_STATEMENT, DATA_CHANGE_STATEMENT } from './commit-gate.js';

/** A query through the database inside one of its transactions on SQLite. */
export class SqliteReentrantUseError extends Error {
  readonly code = 'SQLITE_REENTRANT_USE';
  constructor() {
    super(
      'a query through the database inside one of its transactions would wait forever for the SQLite connection that transaction holds: use the transaction (trx), not the database',
    );
    this.name = 'SqliteReentrantUseError';
  }
}

/** Marks the code a transaction's callback runs (and what it starts) while the transaction is open. */
interface TransactionScope {
  open: boolean;
}

type Scope = AsyncLocalStorage<TransactionScope>;

/** Wraps a transaction builder so that its callback runs in an open `scope`, closed when the transaction ends. */
function scopedTransaction<DB>(builder: TransactionBuilder<DB>, scope: Scope): TransactionBuilder<DB> {
  return new Proxy(builder, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (property === 'execute') {
        return <T>(callback: (trx: Transaction<DB>) => Promise<T>) => {
          const mark: TransactionScope = { open: true };
          return target.execute((trx) => scope.run(mark, () => callback(trx))).finally(() => {
            mark.open = false;
          });
        };
      }
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        return result instanceof TransactionBuilder ? scopedTransaction(result as TransactionBuilder<DB>, scope) : result;
      };
    },
  });
}

/** A Kysely whose transactions open `scope`, and so do those of the Kyselys made from it (withPlugin, withTables, ...). */
function scopedKysely<DB>(db: Kysely<DB>, scope: Scope): Kysely<DB> {
  return new Proxy(db, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (property === 'transaction') return () => scopedTransaction(target.transaction(), scope);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        return result instanceof Kysely && !(result instanceof Transaction) ? scopedKysely(result as Kysely<DB>, scope) : result;
      };
    },
  });
}

/** The stock dialect whose driver refuses to wait for its connection from inside an open transaction. */
class ScopedSqliteDialect extends SqliteDialect {
  constructor(
    config: ConstructorParameters<typeof SqliteDialect>[0],
    private readonly scope: Scope,
  ) {
    super(config);
  }

  override createDriver(): Driver {
    const driver = super.createDriver();
    const { scope } = this;
    return new Proxy(driver, {
      get(target, property) {
        const value: unknown = Reflect.get(target, property, target);
        if (property === 'acquireConnection') {
          return () => {
            if (scope.getStore()?.open) return Promise.reject(new SqliteReentrantUseError());
            return target.acquireConnection();
          };
        }
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  }
}

/** `database` as Kysely's dialect sees it, each statement that commits passing `beforeCommit` first. */
function gatedConnection(database: SqliteConnection, beforeCommit: () => void) {
  // A statement that commits passes the gate first: a COMMIT, or a change in autocommit (run
  // in a transaction of its own for that).
  const gate = <T>(commits: boolean, work: () => T): T => {
    if (commits) beforeCommit();
    if (commits || database.inTransaction) return work();
    return database.transaction(() => {
      const result = work();
      beforeCommit();
      return result;
    })();
  };
  return {
    prepare(sql: string) {
      const statement = database.prepare(sql);
      const commits = COMMIT_STATEMENT.test(sql);
      if (!commits && !DATA_CHANGE_STATEMENT.test(sql)) return statement;
      return {
        reader: statement.reader,
        all: (params: readonly unknown[]) => gate(commits, () => statement.all(params)),
        iterate: (params: readonly unknown[]) => statement.iterate(params),
        run: (params: readonly unknown[]) => gate(commits, () => statement.run(params)),
      };
    },
    // The connection is the thread's: it outlives every Kysely made on it.
    close() {},
  };
}

/**
 * A Kysely on the writer thread's connection. `beforeCommit` runs just before each commit and
 * may refuse it (by throwing: the transaction is rolled back).
 */
export function workerKysely<DB>(database: SqliteConnection, beforeCommit: () => void): Kysely<DB> {
  const scope: Scope = new AsyncLocalStorage();
  const dialect = new ScopedSqliteDialect({ database: gatedConnection(database, beforeCommit) }, scope);
  return scopedKysely(new Kysely<DB>({ dialect }), scope);
}
