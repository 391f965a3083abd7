/**
 * History storage: openStore() and startStore() pick SQLite (embedded default, run in a worker
 * thread) or PostgreSQL from the configuration and apply the migrations; retention starts in
 * the background afterwards, so opening never waits for it.
 */
import { Kysely, PostgresDialect } from 'kysely';
import type { Config } from '../config/index.js';
import { systemClock, type Clock } from '../core/clock.js';
import { StoreOpenError } from './errors.js';
import { postgresHeldBatches } from './history/held-batches.js';
import { KyselyHistoryStore, reportBackgroundError, type StoreOptions, type StoreParts } from './history/history-store.js';
import { MigrationStoppedError } from './migrations/migration-runner.js';
import { applyBatch, createPostgresBatchWriter } from './postgres/batch-writer.js';
import { postgresMigrationSession } from './postgres/migration-session.js';
import { createPostgresPool } from './postgres/pool.js';
import { postgresMaintenance } from './postgres/partitions.js';
import type { Database } from './schema.js';
import { postgresHistoryReader, postgresPreviousLayoutReads } from './postgres/history-reader.js';
import { openSqliteParts } from './sqlite/parts.js';
import type { HistoryStore } from './types.js';

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
export { NEW_WATCH_STATE, WatchStore, type WatchRow, type WatchEventRow, type WatchDeliveryRow, type WatchObservation, type DeliveryAttempt } from './watches/watch-store.js';
export { InvalidCursorError } from './errors.js';
export { StoreUnavailableError } from './history/read-fallback.js';
export { TREND_SCORE_FORMULA } from './history/ranking.js';
export { serverAddress, type StoreOptions } from './history/history-store.js';
export { HISTORY_RANGES, HISTORY_RANGE_NAMES, bucketWindow, type HistoryBucket, type HistoryRange, type ServerHistory } from './history/uptime-history.js';

export { MigratingError, StoreOpenError } from './errors.js';
export { MigrationStoppedError, type MigrationEvent, type MigrationState } from './migrations/migration-runner.js';
export type { RetentionReport } from './maintenance.js';

/** Hourly rows are kept this many days unless configured (ROLLUP_RETENTION_DAYS's default). */
const DEFAULT_ROLLUP_RETENTION_DAYS = 30;

type StoreConfig = Pick<Config, 'database' | 'checkRetentionDays'> & Partial<Pick<Config, 'rollupRetentionDays'>>;

/** SQLite errors that mean the file is not a database Observer can read. */
const UNREADABLE_FILE = new Set(['SQLITE_NOTADB', 'SQLITE_CORRUPT']);

/** A store opened and migrated (tests, tools): resolves once the schema is current. */
export async function openStore(config: StoreConfig, clock: Clock = systemClock, options: StoreOptions = {}): Promise<HistoryStore> {
  const { store, migrate } = await startStore(config, clock, options);
  await migrate();
  return store;
}

/**
 * A store that can be handed to the service before its migrations are done (the service
 * listens meanwhile): the database is opened and checked (not a database, or written by a
 * newer Observer: StoreOpenError, nothing changed); `migrate()` applies the migrations and
 * starts retention. It rejects (the connections released) if they fail, or with
 * MigrationStoppedError if close() stopped them.
 */
export async function startStore(
  config: StoreConfig,
  clock: Clock = systemClock,
  options: StoreOptions = {},
): Promise<{ store: HistoryStore; migrate: () => Promise<void> }> {
  const onError = options.onError ?? reportBackgroundError;
  const retention = { checkDays: config.checkRetentionDays, rollupDays: config.rollupRetentionDays ?? DEFAULT_ROLLUP_RETENTION_DAYS };
  const { database } = config;
  const parts = database.kind === 'sqlite' ? await openSqliteParts(database.path, options, onError).catch(unreadable(database.path)) : postgresParts(database.url, onError);
  const store = new KyselyHistoryStore({ ...parts, retention }, clock, options);
  const release = async (error: unknown): Promise<never> => {
    await parts.db.destroy().catch(() => {});
    return unreadable(parts.location)(error);
  };
  const schema = await store.checkSchema().catch(release);
  // Made before anything can be held (PostgreSQL's table of held batches).
  await parts.held.prepare?.().catch(release);
  let migrated: Promise<void> | null = null;
  // A stop (close()) releases the connections itself, after the last writes.
  const migrate = () => (migrated ??= store.migrate().then(() => store.start(), (error: unknown) => (error instanceof MigrationStoppedError ? Promise.reject(error) : release(error))));
  // A new database (its tables take moments to create, its clean-up is of empty tables) is made
  // whole before the service listens, and one already current is served before it: /history,
  // /trends and /stats answer from the first request, not 503 `migrating`. An upgrade of stored
  // data runs while it listens, and so does the rest of an interrupted one (the work after the
  // migrations, the batches held meanwhile).
  if (schema === 'new') await migrate();
  else if (schema === 'current') await Promise.race([store.schemaCurrent(), migrate()]);
  return { store, migrate };
}

/** Rethrows an error that says the file is no database as StoreOpenError naming it. */
function unreadable(location: string): (error: unknown) => never {
  return (error) => {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && UNREADABLE_FILE.has(code)) {
      throw new StoreOpenError(`${location} cannot be read as an SQLite database (${code}); it was left unchanged`, { cause: error });
    }
    throw error;
  };
}

function postgresParts(url: string, onError: (error: unknown) => void): Omit<StoreParts, 'retention'> {
  const pool = createPostgresPool(url, onError);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const where = new URL(url);
  return {
    db,
    dialect: 'postgres',
    location: `PostgreSQL database ${where.pathname.slice(1) || '(default)'} on ${where.host}`,
    writer: createPostgresBatchWriter(db),
    maintenance: postgresMaintenance(db),
    readHistory: postgresHistoryReader(pool),
    previousLayout: postgresPreviousLayoutReads(pool, db),
    held: postgresHeldBatches(db, applyBatch),
    migrationSession: postgresMigrationSession(url, pool, onError),
  };
}
