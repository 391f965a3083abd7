/**
 * The SQLite writer thread's transactions. One function begins, commits and rolls back every
 * transaction on the thread's connection (group commits, retention and vacuum steps, watch
 * operations, migration steps, single statements), and passes the commit gate
 * (commit-gate.ts) just before each COMMIT, so that a request the main thread has given up on
 * commits nothing.
 *
 * The failure that ended a transaction is the one its caller sees, whatever ROLLBACK says
 * after it. SQLite rolls a transaction back by itself on some errors (a full disk, an I/O
 * error, no memory): a ROLLBACK sent then fails with "no transaction is active", and that
 * error must not hide the one that says why the write failed (the write queue keeps a batch
 * that met a full disk, and sets aside only one the database refuses for what it holds). So
 * ROLLBACK is sent only while a transaction is open, and what it throws is not passed on; a
 * connection still in a transaction after it is closed by the thread (worker.ts).
 *
 * Transactions do not nest: one begun inside another fails at once, and the outer one rolls
 * back. Nothing waits for a connection either: the thread runs one request at a time on its
 * one connection, so a statement run while a transaction is open is part of it.
 */
import type { SqliteConnection } from './binding.js';

/** Runs `work` in one transaction: all of it is committed, or none of it (and `work`'s failure is thrown). */
export type RunTransaction = <T>(work: () => T | Promise<T>) => Promise<T>;

/** A transaction begun while another was open on the SQLite writer. */
export class SqliteNestedTransactionError extends Error {
  readonly code = 'SQLITE_NESTED_TRANSACTION';
  constructor() {
    super('a transaction was begun inside another on the SQLite writer: run the work inside the transaction already open');
    this.name = 'SqliteNestedTransactionError';
  }
}

/**
 * The transaction was no longer open when its work ended: the work committed or rolled it back
 * itself, or went on after an error with which SQLite rolled it back.
 */
export class SqliteTransactionEndedError extends Error {
  readonly code = 'SQLITE_TRANSACTION_ENDED';
  constructor() {
    super('the transaction on the SQLite writer ended before its work did (a COMMIT or ROLLBACK inside it, or an error SQLite rolled it back with, caught by the work)');
    this.name = 'SqliteTransactionEndedError';
  }
}

/** The thread's one way to run a transaction on `database`; `beforeCommit` may refuse a commit (by throwing: it is rolled back). */
export function transactionRunner(database: SqliteConnection, beforeCommit: () => void): RunTransaction {
  return async (work) => {
    if (database.inTransaction) throw new SqliteNestedTransactionError();
    // IMMEDIATE: the write lock is taken at BEGIN, so no statement inside waits for it.
    database.exec('BEGIN IMMEDIATE');
    try {
      const result = await work();
      if (!database.inTransaction) throw new SqliteTransactionEndedError();
      beforeCommit();
      database.exec('COMMIT');
      return result;
    } catch (error) {
      rollback(database);
      throw error;
    }
  };
}

/** Rolls back what is still open; what it throws is dropped: the caller sees the failure that led here. */
function rollback(database: SqliteConnection): void {
  if (!database.inTransaction) return;
  try {
    database.exec('ROLLBACK');
  } catch {
    // Left open, it is closed by the thread once the request is answered.
  }
}
