/**
 * Builds Observer's dependencies from its configuration: the one place that decides which
 * implementation serves (SQLite or PostgreSQL, memory or Redis). main.ts starts what this
 * returns; tests build the same thing.
 */
import { Redis } from 'ioredis';
import type { Config } from './config/index.js';
import { ClientHasher } from './core/client-hash.js';
import { systemClock, type Clock } from './core/clock.js';
import { RedisDailySecret } from './core/redis-secret.js';
import { buildApp, type AppDeps } from './http/app.js';
import { BackgroundRefresher, Blocklist, createStatusService, withBlockedFlag } from './status/index.js';
import { RedisStatusCache } from './status/redis-cache.js';
import { openStore } from './store/index.js';

export interface ComposeOptions {
  clock?: Clock;
  logger?: AppDeps['logger'];
  /** ICMP echo; the system `ping` unless given (null turns it off). */
  icmp?: ((ip: string, signal: AbortSignal) => Promise<boolean | null>) | null;
}

/** The app with every route, its store, status service and (with REDIS_URL) Redis; closing the app closes them. */
export async function composeApp(config: Config, options: ComposeOptions = {}) {
  const clock = options.clock ?? systemClock;
  let logError: (error: unknown, context: string) => void = (error, context) =>
    process.stderr.write(`observer: ${context}: ${String(error)}\n`);
  const redis = config.redisUrl ? new Redis(config.redisUrl, { maxRetriesPerRequest: 2 }) : null;
  const store = await openStore(config, clock, { onError: (error) => logError(error, 'history store') });
  const hasher = new ClientHasher(clock, redis ? new RedisDailySecret(redis) : null, (error) => logError(error, 'daily secret'));
  await hasher.ready();
  const status = createStatusService({
    config,
    clock,
    store,
    ...(redis ? { cache: new RedisStatusCache(redis) } : {}),
    ...(options.icmp !== undefined ? { icmp: options.icmp } : {}),
    onError: (error, context) => logError(error, context),
  });
  const blocklist = config.blocklistSource
    ? new Blocklist({
        source: config.blocklistSource,
        refreshMinutes: config.blocklistRefreshMinutes,
        onError: (error, context) => logError(error, context),
      })
    : null;
  const refresher = new BackgroundRefresher({
    status,
    clock,
    windowMinutes: config.refreshWindowMinutes,
    pingsPerMinute: Math.max(1, config.refreshPingsPerMinute),
    ttlSeconds: config.statusCacheTtlSeconds,
    redis,
    onError: (error, context) => logError(error, context),
  });
  const app = await buildApp({
    config,
    clock,
    redis,
    hasher,
    status: withBlockedFlag(refresher.tracking(status), blocklist),
    store,
    ...(options.logger !== undefined ? { logger: options.logger } : {}),
  });
  logError = (error, context) => app.log.warn({ err: error, context }, 'background error');
  app.addHook('onClose', async () => {
    blocklist?.stop();
    await refresher.stop();
    await store.close();
    await redis?.quit();
  });
  /** Background work main.ts starts once the app listens: the blocklist's loads and the refresher. */
  const startBackground = async () => {
    await blocklist?.start();
    if (config.refreshPingsPerMinute > 0) refresher.start();
  };
  return { app, store, status, hasher, blocklist, refresher, startBackground };
}
