/**
 * History storage: openStore() picks SQLite (embedded default) or PostgreSQL from the
 * configuration, applies the migrations and prunes old checks before handing the store out.
 */
import { Kysely } from 'kysely';
import type { Config } from '../config/index.js';
import { systemClock, type Clock } from '../core/clock.js';
import { KyselyHistoryStore, reportBackgroundError, type StoreOptions } from './history-store.js';
import { createPostgresBatchWriter } from './postgres/batch-writer.js';
import { createPostgresDialect } from './postgres/dialect.js';
import type { Database } from './schema.js';
import { createSqliteBatchWriter } from './sqlite/batch-writer.js';
import { startCheckpointer, type Checkpointer } from './sqlite/checkpointer.js';
import { createSqliteDialect } from './sqlite/dialect.js';
import type { HistoryStore } from './types.js';
import type { BatchWriter } from './write-queue.js';

export type {
  CheckRecord,
  CounterIncrements,
  HistoryStore,
  RecentCheck,
  Statistics,
  Store,
  StoreHealth,
  TrendPage,
  TrendServer,
} from './types.js';
export { NEW_WATCH_STATE, WatchStore, type WatchRow, type WatchEventRow, type WatchDeliveryRow, type WatchObservation, type DeliveryAttempt } from './watch-store.js';
export { InvalidCursorError } from './errors.js';
export { StoreUnavailableError } from './read-fallback.js';
export { TREND_SCORE_FORMULA } from './ranking.js';
export { serverAddress, type StoreOptions } from './history-store.js';
export { HISTORY_RANGES, HISTORY_RANGE_NAMES, bucketWindow, type HistoryBucket, type HistoryRange, type ServerHistory } from './uptime-history.js';

/** Checks and look-ups recorded before the SQLite checkpoint worker starts. */
const CHECKPOINT_WORKER_AFTER_ROWS = 1_000;

export async function openStore(
  config: Pick<Config, 'database' | 'checkRetentionDays'>,
  clock: Clock = systemClock,
  options: StoreOptions = {},
): Promise<HistoryStore> {
  const onError = options.onError ?? reportBackgroundError;
  const { database } = config;
  const sqlite = database.kind === 'sqlite' ? { ...createSqliteDialect(database.path, options.sqliteBinding), path: database.path } : null;
  const dialect = database.kind === 'sqlite' ? sqlite!.dialect : createPostgresDialect(database.url, onError);
  const db = new Kysely<Database>({ dialect });
  // The SQLite writer prepares its statements on the migrated schema, so it is made lazily,
  // and so is the checkpointer's worker thread: an instance that records nothing holds none.
  let sqliteWriter: BatchWriter | null = null;
  let checkpointer: Checkpointer | null | undefined;
  let recordedRows = 0;
  // The SQLite writer runs on Kysely's one connection, so it waits for a Kysely transaction in
  // progress (the watches') instead of writing into it.
  const writer: BatchWriter = sqlite
    ? (batch) => {
        // On the migrated file (writes come after the migrations): the worker opens it and must
        // find it. Only once the instance has recorded CHECKPOINT_WORKER_AFTER_ROWS rows: until
        // then SQLite's own checkpoints (one per 1,000 pages of log) cost the event loop little,
        // and an instance that only counts requests holds no second isolate.
        recordedRows += batch.checks.length + batch.lookups.length;
        if (checkpointer === undefined && recordedRows >= CHECKPOINT_WORKER_AFTER_ROWS) {
          checkpointer = startCheckpointer(sqlite.database, sqlite.path, { onError, module: sqlite.binding.modulePath });
        }
        return db.connection().execute(async () => (sqliteWriter ??= createSqliteBatchWriter(sqlite.database))(batch));
      }
    : createPostgresBatchWriter(db);
  const store = new KyselyHistoryStore(db, database.kind, config.checkRetentionDays, clock, writer, options);
  try {
    await store.migrate();
    await store.prune();
  } catch (error) {
    await db.destroy();
    throw error;
  }
  if (sqlite) store.onClose(async () => checkpointer?.stop());
  store.start();
  return store;
}
