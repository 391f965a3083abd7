/**
 * The watch store's transactions on SQLite, each one request to the writer's thread: there
 * Kysely's own SQLite dialect runs the same WatchStore code on the thread's connection, BEGIN to
 * COMMIT within the request, so that no transaction spans threads. The main thread's
 * SqliteWatchStore (parts.ts) sends them; its other methods (single statements, reads) go
 * through the store's Kysely. Kysely and the watch store load in the writer's thread with its
 * first watch transaction that may find something (answerWithoutWatches) only.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';
import type { SqliteConnection } from './binding.js';
import { COMMIT_STATEMENT, DATA_CHANGE_STATEMENT } from './commit-gate.js';

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

/** What the background look-ups for work answer while nothing is stored that they could find. */
const WHEN_NOTHING_STORED: Partial<Record<WatchOperation, unknown>> = { claimDue: [], dueEvents: [], prune: undefined };

/**
 * In the writer's thread: answers the look-ups for due checks and deliveries and the watches'
 * retention, which every instance asks every few seconds, while no watch, event or delivery
 * is stored: with one prepared statement, so that an instance nobody set a watch on never
 * loads Kysely and the watch store into the thread. Null when the request needs the runner.
 */
export function answerWithoutWatches(database: SqliteConnection): (request: WatchRequest) => { answer: unknown } | null {
  const anything = database.prepare(
    'SELECT EXISTS (SELECT 1 FROM watches) OR EXISTS (SELECT 1 FROM watch_events) OR EXISTS (SELECT 1 FROM watch_deliveries) AS stored',
  );
  return ({ method }) => {
    if (!Object.hasOwn(WHEN_NOTHING_STORED, method)) return null;
    const [row] = anything.all([]) as Array<{ stored: number }>;
    return row?.stored === 0 ? { answer: WHEN_NOTHING_STORED[method] } : null;
  };
}

/**
 * In the writer's thread: runs watch operations on `database`. `beforeCommit` runs just
 * before each COMMIT and may refuse it (by throwing: the transaction is rolled back).
 */
export async function createWatchRunner(database: SqliteConnection, beforeCommit: () => void): Promise<Runner> {
  const { Kysely, SqliteDialect } = await import('kysely');
  const { WatchStore } = await import('../watch-store.js');
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
  const gated = {
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
    close() {},
  };
  const db: Kysely<Database> = new Kysely<Database>({ dialect: new SqliteDialect({ database: gated }) });
  const store = new WatchStore(db);
  return ({ method, args }) => (store[method] as (...a: unknown[]) => Promise<unknown>).apply(store, args);
}
