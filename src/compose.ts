/**
 * Builds Observer's dependencies from its configuration: the one place that decides which
 * implementation serves (SQLite or PostgreSQL, memory or Redis). main.ts starts what this
 * returns; tests build the same thing.
 */
import type { Config } from './config/index.js';
import { ClientHasher } from './core/client-hash.js';
import { systemClock, type Clock } from './core/clock.js';
import { buildApp, type AppDeps } from './http/app.js';
import type { DependencyHealth } from './http/routes/health.js';
import { RedisDailySecret } from './redis/daily-secret.js';
import { SharedRedis } from './redis/shared-redis.js';
import { createStatusService } from './status/index.js';
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
  let logRedis: (state: string, reason: string) => void = (state, reason) =>
    process.stderr.write(`observer: redis ${state}: ${reason}\n`);
  const redis = config.redisUrl
    ? new SharedRedis(config.redisUrl, {
        commandTimeoutMs: config.redisCommandTimeoutMs,
        onStateChange: (state, reason) => logRedis(state, reason),
      })
    : null;
  // Start on the local fallbacks if Redis does not answer at once; the breaker switches over.
  await redis?.ready(1_000);
  const store = await openStore(config, clock, { onError: (error) => logError(error, 'history store') });
  const hasher = new ClientHasher(clock, redis ? new RedisDailySecret(redis) : null, (error) => logError(error, 'daily secret'));
  await hasher.ready();
  const status = createStatusService({
    config,
    clock,
    store,
    ...(redis ? { cache: new RedisStatusCache(redis, { now: () => clock.now() }) } : {}),
    ...(options.icmp !== undefined ? { icmp: options.icmp } : {}),
    onError: (error, context) => logError(error, context),
  });
  const app = await buildApp({
    config,
    clock,
    redis,
    hasher,
    status,
    store,
    health: () => dependencyHealth(store, redis),
    ...(options.logger !== undefined ? { logger: options.logger } : {}),
  });
  logError = (error, context) => app.log.warn({ err: error, context }, 'background error');
  logRedis = (state, reason) =>
    app.log[state === 'ok' ? 'info' : 'warn']({ reason }, state === 'ok' ? 'redis back: shared mode' : 'redis down: local mode');
  app.addHook('onClose', async () => {
    await store.close();
    await redis?.close();
  });
  return { app, store, status, hasher, redis };
}

/** What the store reports of its write buffer (the store's `health()`, where it has one). */
interface StoreHealth {
  state: 'ok' | 'degraded' | 'down';
  buffered: number;
  dropped: number;
}

/** The health route's extra fields: database, Redis (`disabled` without REDIS_URL), write buffer. */
function dependencyHealth(store: object, redis: SharedRedis | null): DependencyHealth {
  const storeHealth = (store as { health?: () => StoreHealth }).health?.();
  return {
    ...(storeHealth
      ? { database: storeHealth.state, write_buffer: storeHealth.buffered, write_buffer_dropped: storeHealth.dropped }
      : {}),
    redis: redis ? redis.health() : 'disabled',
  };
}
