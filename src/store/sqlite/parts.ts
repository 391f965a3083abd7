/**
 * The SQLite store's parts (history-store.ts, StoreParts): a writer and a reader, each a
 * worker thread on the file, Kysely on them for single statements, and the operations sent
 * whole (group commits, retention steps, history reads, watch transactions, migration steps),
 * each one request to a worker.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { StoreOptions, StoreParts } from '../history/history-store.js';
import { Kysely, sql } from 'kysely';
import type { Database } from '../schema.js';
import { WatchStore } from '../watches/watch-store.js';
import { bucketWindow, type BucketWindow, type HistoryRange, type HistorySums } from '../history/uptime-history.js';
import { fileHeldBatches, memoryHeldBatches } from '../history/held-batches.js';
import type { WriteBatch } from '../history/write-queue.js';
import { sqliteAfterCommitSteps } from './after-commit.js';
import { sqliteBinding } from './binding.js';
import { createSqliteDialect } from './dialect.js';
import { PREVIOUS_LAYOUT_STANDS, type HistoryAnswer } from './history-reader.js';
import { sqliteMaintenance } from './maintenance.js';
import type { MigrationEvent, MigrationStepDone, MigrationSteps } from '../migrations/migration-runner.js';
import { MIGRATION_STEP_DEADLINE_MS } from './migrate-ops.js';
import { WATCH_OPERATIONS, type WatchRequest } from './watch-ops.js';
import { SqliteWorker } from './worker-client.js';
import { writerRequests } from './writer-work.js';

/** The SQLite store's parts, and its threads (which tests stop as a crash would). */
export type SqliteParts = Omit<StoreParts, 'retention'> & { threads: { writer: SqliteWorker; reader: SqliteWorker } };

export async function openSqliteParts(path: string, options: StoreOptions, onError: (error: unknown) => void): Promise<SqliteParts> {
  if (path !== ':memory:' && !path.startsWith('file:')) mkdirSync(dirname(path), { recursive: true });
  const binding = sqliteBinding(options.sqliteBinding);
  const writer = await SqliteWorker.start(path, binding, onError);
  // An in-memory database is the writer's connection's own: another would open an empty one.
  const inMemory = path === ':memory:' || /[?&]mode=memory(&|$)/.test(path);
  const reader = inMemory ? writer : SqliteWorker.reader(writer);
  const sqlite = createSqliteDialect(writer, reader);
  const { openReads, read } = sqlite;
  const requests = writerRequests(writer, options.onWriterWork);
  const write = (batch: WriteBatch) => requests.write('batch', { op: 'batch', batch }).then(() => {});
  const inFile = !inMemory && !path.startsWith('file:');
  const reads = new Kysely<Database>({ dialect: sqlite.readsDialect });
  return {
    threads: { writer, reader },
    db: new Kysely<Database>({ dialect: sqlite.dialect }),
    dialect: 'sqlite',
    location: path,
    // Each batch, watch transaction, retention step and migration step is one request, run
    // whole in the writer's thread.
    writer: write,
    held: inFile ? fileHeldBatches(`${path}-held`, write) : memoryHeldBatches(write),
    maintenance: sqliteMaintenance(requests),
    migrated: openReads,
    migrationSteps: sqliteMigrationSteps(writer, options.migrationRowsPerStep),
    // A database in memory is the writer's own: no other process can open it.
    ...(inFile ? { afterCommitSteps: sqliteAfterCommitSteps(path, binding) } : {}),
    watches: (db) => new SqliteWatchStore(db, (request) => writer.request({ op: 'watch', ...request })),
    readHistory: async (serverId, range, now) => {
      const window = bucketWindow(range, now);
      return historySums(range, window, (await read((worker) => worker.request({ op: 'history', serverId, window }))) as HistoryAnswer);
    },
    previousLayout: {
      db: reads,
      layout: { checks: 'checks', key: 'rowid' },
      readHistory: async (serverId, range, now) => {
        const window = bucketWindow(range, now);
        const answer = (await read((worker) => worker.request({ op: 'history', serverId, window, previous: true }), true)) as HistoryAnswer;
        return answer.switched ? 'switched' : historySums(range, window, answer);
      },
      stands: async () => Number((await sql.raw<{ n: number }>(PREVIOUS_LAYOUT_STANDS).execute(reads)).rows[0]?.n) > 0,
    },
  };
}

function historySums(range: HistoryRange, window: BucketWindow, { server, sums }: HistoryAnswer): HistorySums | null {
  return server && sums ? { server, range, window, sums } : null;
}

/** A WatchStore whose transactions (and reads in a transaction) run whole in the writer's thread. */
export class SqliteWatchStore extends WatchStore {
  constructor(
    db: Kysely<Database>,
    private readonly send: (request: WatchRequest) => Promise<unknown>,
  ) {
    super(db);
    for (const method of WATCH_OPERATIONS) {
      Object.defineProperty(this, method, { value: (...args: unknown[]) => this.send({ method, args }) });
    }
  }
}

/** The migrations' steps, each one request to `writer` (migrate-ops.ts), its statements' events passed on as they come. */
function sqliteMigrationSteps(writer: SqliteWorker, rowsPerStep?: number): MigrationSteps {
  return async (cursor, onEvent) => {
    const request = { op: 'migrate' as const, cursor, events: onEvent !== undefined, ...(rowsPerStep === undefined ? {} : { rowsPerStep }) };
    const options = { deadlineMs: MIGRATION_STEP_DEADLINE_MS, ...(onEvent ? { onEvent: (event: unknown) => onEvent(event as MigrationEvent) } : {}) };
    return (await writer.request(request, options)) as MigrationStepDone | null;
  };
}
