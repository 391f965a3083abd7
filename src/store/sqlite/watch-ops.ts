/**
 * The watch store's transactions on SQLite, each one request to the writer's thread: there
 * Kysely runs the same WatchStore code on the thread's connection, BEGIN to COMMIT within the
 * request, so that no transaction spans threads. The main thread's
 * SqliteWatchStore (parts.ts) sends them; its other methods (single statements, reads) go
 * through the store's Kysely. Kysely (worker-kysely.ts) and the watch store load in the
 * writer's thread with its first watch transaction only.
 */
import type { Database } from '../schema.js';
import type { Transact } from '../transact.js';
import type { SqliteConnection } from './binding.js';
import type { RunTransaction } from './transaction.js';

/**
 * The methods of WatchStore that run a transaction, and those that read in one (the due
 * checks and deliveries, asked every second, and the watches' retention): each is one request.
 */
export const WATCH_OPERATIONS = [
  'insertWithinCaps',
  'delete',
  'markVerified',
  'saveObservation',
  'finishAttempt',
  'logAttempt',
  'claimDue',
  'dueEvents',
  'prune',
] as const;
export type WatchOperation = (typeof WATCH_OPERATIONS)[number];

export interface WatchRequest {
  method: WatchOperation;
  args: unknown[];
}

type Runner = (request: WatchRequest) => Promise<unknown>;

/**
 * The transactions a watch operation asks for, inside the one its request runs in: they are
 * parts of it.
 */
const withinOperation: Transact = (db, work) => work(db);

/**
 * In the writer's thread: runs watch operations on `database`, each whole in one transaction
 * (its reads and writes outside the store's own transactions too), so that a request past its
 * deadline commits none of it.
 */
export async function createWatchRunner(database: SqliteConnection, runTransaction: RunTransaction): Promise<Runner> {
  const { workerKysely } = await import('./worker-kysely.js');
  const { WatchStore } = await import('../watches/watch-store.js');
  const store = new WatchStore(workerKysely<Database>(database), withinOperation);
  return ({ method, args }) => runTransaction(() => (store[method] as (...a: unknown[]) => Promise<unknown>).apply(store, args));
}
