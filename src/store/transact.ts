/**
 * How the code both databases share (the watches, the migrations) asks for a transaction: it
 * is handed a Transact and never calls `db.transaction()` itself. On PostgreSQL that is
 * Kysely's own transaction on a pooled connection. On SQLite that code runs in the writer's
 * thread, where one function begins, commits and rolls back every transaction
 * (sqlite/transaction.ts) and Kysely's transactions are refused, so that none is opened any
 * other way.
 */
import type { Kysely } from 'kysely';

/** Runs `work` as one transaction on `db`, its statements through `trx`. */
export type Transact = <DB, T>(db: Kysely<DB>, work: (trx: Kysely<DB>) => Promise<T>) => Promise<T>;

/** Kysely's own transaction (PostgreSQL). */
export const kyselyTransaction: Transact = (db, work) => db.transaction().execute(work);
