/**
 * History storage: openStore() picks SQLite (embedded default) or PostgreSQL from the
 * configuration, applies the migrations and prunes old checks before handing the store out.
 */
import { Kysely } from 'kysely';
import type { Config } from '../config/index.js';
import { systemClock, type Clock } from '../core/clock.js';
import { KyselyHistoryStore, reportBackgroundError, type StoreOptions } from './history-store.js';
import { createPostgresDialect } from './postgres/dialect.js';
import type { Database } from './schema.js';
import { createSqliteDialect } from './sqlite/dialect.js';
import type { HistoryStore } from './types.js';

export type { CheckRecord, CounterIncrements, HistoryStore, RecentCheck, Statistics, Store, TrendPage, TrendServer } from './types.js';
export { InvalidCursorError } from './errors.js';
export { TREND_SCORE_FORMULA } from './ranking.js';
export { serverAddress, type StoreOptions } from './history-store.js';
export { HISTORY_RANGES, HISTORY_RANGE_NAMES, bucketWindow, type HistoryBucket, type HistoryRange, type ServerHistory } from './uptime-history.js';

export async function openStore(
  config: Pick<Config, 'database' | 'checkRetentionDays'>,
  clock: Clock = systemClock,
  options: StoreOptions = {},
): Promise<HistoryStore> {
  const onError = options.onError ?? reportBackgroundError;
  const { database } = config;
  const dialect =
    database.kind === 'sqlite' ? createSqliteDialect(database.path) : createPostgresDialect(database.url, onError);
  const db = new Kysely<Database>({ dialect });
  const store = new KyselyHistoryStore(db, database.kind, config.checkRetentionDays, clock, options);
  try {
    await store.migrate();
    await store.prune();
  } catch (error) {
    await db.destroy();
    throw error;
  }
  store.start();
  return store;
}
