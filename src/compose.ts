/**
 * Builds Observer's dependencies from its configuration: the one place that decides which
 * implementation serves (SQLite or PostgreSQL, memory or Redis). main.ts starts what this
 * returns; tests build the same thing.
 */
import { getHeapStatistics } from 'node:v8';
import type { Config } from './config/index.js';
import { cacheBudget } from './core/cache-budget.js';
import { ClientHasher } from './core/client-hash.js';
import { systemClock, type Clock } from './core/clock.js';
import { buildApp, type AppDeps } from './http/app.js';
import { startMetricsServer, type MetricsServer } from './http/metrics.js';
import { MemoryRateLimitStore, RedisRateLimitStore } from './http/rate-limit.js';
import { IcmpPinger } from './resolve/index.js';
import type { DependencyHealth } from './http/routes/health.js';
import { RedisDailySecret } from './redis/daily-secret.js';
import { SharedRedis } from './redis/shared-redis.js';
import { BackgroundRefresher, Blocklist, MemoryStatusCache, createStatusService, withBlockedFlag } from './status/index.js';
import { RedisStatusCache } from './status/redis-cache.js';
import { openStore, type StoreOptions } from './store/index.js';
import type { Store } from './store/types.js';

export interface ComposeOptions {
  clock?: Clock;
  logger?: AppDeps['logger'];
  /** Requests slower than this are logged as warnings (default 1000 ms); for tests. */
  slowRequestMs?: number;
  /** ICMP echo; an IcmpPinger (raw sockets) per the ICMP setting unless given (null turns it off). */
  icmp?: ((ip: string, signal: AbortSignal) => Promise<boolean | null>) | null;
  /** The history store's group commit (window, rows per window), for tests; HISTORY_BUFFER_MAX still bounds it. */
  writes?: NonNullable<StoreOptions['writes']>;
}

/** The app with every route, its store, status service and (with REDIS_URL) Redis; closing the app closes them. */
export async function composeApp(config: Config, options: ComposeOptions = {}) {
  const clock = options.clock ?? systemClock;
  const budget = cacheBudget(config.cacheMemoryMb);
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
  const store = await openStore(config, clock, {
    onError: (error) => logError(error, 'history store'),
    writes: { ...options.writes, maxRows: config.historyBufferMax },
  });
  // One pinger for the process: two raw sockets shared by every echo (ICMP=off: none).
  const pinger =
    options.icmp === undefined && config.icmp === 'auto'
      ? new IcmpPinger({ timeoutMs: Math.min(2000, config.pingTimeoutMs), onError: (error) => logError(error, 'icmp') })
      : null;
  const icmpMode = pinger?.start() ?? { mode: options.icmp === undefined ? 'off' : 'injected', detail: '' };
  const hasher = new ClientHasher(clock, redis ? new RedisDailySecret(redis) : null, (error) => logError(error, 'daily secret'));
  await hasher.ready();
  // Metrics only when they are served (METRICS_TOKEN or METRICS_PORT): otherwise no cost per request.
  const metrics =
    config.metricsToken !== null || config.metricsPort !== null
      ? (await import('./metrics/index.js')).createMetrics({
          pingsInFlight: () => status.activePings,
          history: () => store.health(),
          redis: () => redis?.health() ?? null,
        })
      : null;
  // Pings per target IP and new servers per client, counted like the rate limits: in Redis
  // across instances, else here.
  const budgetCounter = redis
    ? new RedisRateLimitStore(redis, 'observer:', () => clock.now(), { maxBytes: budget.budgets })
    : new MemoryRateLimitStore(() => clock.now(), { maxBytes: budget.budgets });
  const status = createStatusService({
    config,
    clock,
    store,
    budgetCounter,
    ...(metrics ? { observe: { ping: (mode, online, seconds) => metrics.observePing(mode, online, seconds), cacheResult: (result) => metrics.observeCacheResult(result) } } : {}),
    ...(redis
      ? { cache: new RedisStatusCache(redis, { now: () => clock.now(), local: new MemoryStatusCache({ maxBytes: budget.statuses, now: () => clock.now() }) }) }
      : {}),
    icmp: options.icmp !== undefined ? options.icmp : pinger && ((ip, signal) => pinger.echo(ip, signal)),
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
    maxBytes: budget.refresher,
    onError: (error, context) => logError(error, context),
  });
  const app = await buildApp({
    config,
    clock,
    redis,
    hasher,
    status: withBlockedFlag(refresher.tracking(status), blocklist),
    store,
    ...(metrics ? { metrics } : {}),
    health: () => dependencyHealth(store, redis),
    ...(options.logger !== undefined ? { logger: options.logger } : {}),
    ...(options.slowRequestMs !== undefined ? { slowRequestMs: options.slowRequestMs } : {}),
  });
  const metricsServer: MetricsServer | null =
    metrics && config.metricsPort !== null ? await startMetricsServer(metrics, config.metricsPort) : null;
  logError = (error, context) => app.log.warn({ err: error, context }, 'background error');
  // The caches' budget must leave the heap room for everything else (docs/performance.md#memory).
  const heapLimit = getHeapStatistics().heap_size_limit;
  if (config.cacheMemoryMb * 1024 * 1024 > heapLimit / 3) {
    app.log.warn(
      { cacheMemoryMb: config.cacheMemoryMb, heapLimitMb: Math.round(heapLimit / 1024 / 1024) },
      'CACHE_MEMORY_MB is more than a third of the heap limit: raise --max-old-space-size (NODE_OPTIONS) or lower CACHE_MEMORY_MB',
    );
  }
  // Said once, at start: which ICMP mode serves the `icmp` field.
  app.log.info({ icmp: icmpMode.mode, detail: icmpMode.detail || undefined }, `icmp: ${icmpMode.mode}`);
  logRedis = (state, reason) =>
    app.log[state === 'ok' ? 'info' : 'warn']({ reason }, state === 'ok' ? 'redis back: shared mode' : 'redis down: local mode');
  app.addHook('onClose', async () => {
    blocklist?.stop();
    await refresher.stop();
    await status.recorded();
    pinger?.close();
    budgetCounter.close();
    await metricsServer?.close();
    await store.close();
    await redis?.close();
  });
  /** Background work main.ts starts once the app listens: the blocklist's loads and the refresher. */
  const startBackground = async () => {
    await blocklist?.start();
    if (config.refreshPingsPerMinute > 0) refresher.start();
  };
  return { app, store, status, hasher, redis, metrics, metricsServer, blocklist, refresher, startBackground };
}

/** The health route's extra fields: database, Redis (`disabled` without REDIS_URL), write buffer. */
function dependencyHealth(store: Store, redis: SharedRedis | null): DependencyHealth {
  const storeHealth = store.health();
  return {
    database: storeHealth.state,
    write_buffer: storeHealth.buffered,
    write_buffer_dropped: storeHealth.dropped,
    redis: redis ? redis.health() : 'disabled',
  };
}
