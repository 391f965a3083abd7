/**
 * The watch store's transactions on SQLite, each one request to the writer's thread: there
 * Kysely's own SQLite dialect runs the same WatchStore code on the thread's connection, BEGIN to
 * COMMIT within the request, so that no transaction spans threads. The main thread's
 * SqliteWatchStore (parts.ts) sends them; its other methods (single statements, reads) go
 * through the store's Kysely. Kysely and the watch store load in the writer's thread with its
 * first watch transaction only.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';
import type { SqliteConnection } from './binding.js';

/** The methods of WatchStore that run a transaction. */
export const WATCH_TRANSACTIONS = ['insertWithinCaps', 'delete', 'markVerified', 'saveObservation', 'finishAttempt', 'logAttempt'] as const;
export type WatchTransaction = (typeof WATCH_TRANSACTIONS)[number];

export interface WatchRequest {
  method: WatchTransaction;
  args: unknown[];
}

type Runner = (request: WatchRequest) => Promise<unknown>;

/**
 * In the writer's thread: runs watch transactions on `database`. `beforeCommit` runs just
 * before each COMMIT and may refuse it (by throwing: the transaction is rolled back).
 */
export async function createWatchRunner(database: SqliteConnection, beforeCommit: () => void): Promise<Runner> {
  const { Kysely, SqliteDialect } = await import('kysely');
  const { WatchStore } = await import('../watch-store.js');
  const gated = {
    prepare(sql: string) {
      const statement = database.prepare(sql);
      if (!/^\s*commit\b/i.test(sql)) return statement;
      return {
        reader: false,
        all: (params: readonly unknown[]) => statement.all(params),
        iterate: (params: readonly unknown[]) => statement.iterate(params),
        run: (params: readonly unknown[]) => {
          beforeCommit();
          return statement.run(params);
        },
      };
    },
    close() {},
  };
  const db: Kysely<Database> = new Kysely<Database>({ dialect: new SqliteDialect({ database: gated }) });
  const store = new WatchStore(db);
  return ({ method, args }) => (store[method] as (...a: unknown[]) => Promise<unknown>).apply(store, args);
}
