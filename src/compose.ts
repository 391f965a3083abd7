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
import { startMetricsServer, type MetricsServer } from './http/metrics.js';
import { createMetrics } from './metrics/index.js';
import { IcmpPinger } from './resolve/index.js';
import { createStatusService } from './status/index.js';
import { RedisStatusCache } from './status/redis-cache.js';
import { openStore } from './store/index.js';

export interface ComposeOptions {
  clock?: Clock;
  logger?: AppDeps['logger'];
  /** ICMP echo; an IcmpPinger (raw sockets) per the ICMP setting unless given (null turns it off). */
  icmp?: ((ip: string, signal: AbortSignal) => Promise<boolean | null>) | null;
}

/** The app with every route, its store, status service and (with REDIS_URL) Redis; closing the app closes them. */
export async function composeApp(config: Config, options: ComposeOptions = {}) {
  const clock = options.clock ?? systemClock;
  let logError: (error: unknown, context: string) => void = (error, context) =>
    process.stderr.write(`observer: ${context}: ${String(error)}\n`);
  const redis = config.redisUrl ? new Redis(config.redisUrl, { maxRetriesPerRequest: 2 }) : null;
  const store = await openStore(config, clock, {
    onError: (error) => logError(error, 'history store'),
    writes: { maxRows: config.historyBufferMax },
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
      ? createMetrics({
          pingsInFlight: () => status.activePings,
          history: () => store.health(),
          redis: () => (redis === null ? null : redis.status === 'ready' ? 'ok' : 'down'),
        })
      : null;
  const status = createStatusService({
    config,
    clock,
    store,
    ...(metrics ? { observe: { ping: (mode, online, seconds) => metrics.observePing(mode, online, seconds), cacheResult: (result) => metrics.observeCacheResult(result) } } : {}),
    ...(redis ? { cache: new RedisStatusCache(redis) } : {}),
    icmp: options.icmp !== undefined ? options.icmp : pinger && ((ip, signal) => pinger.echo(ip, signal)),
    onError: (error, context) => logError(error, context),
  });
  const app = await buildApp({
    config,
    clock,
    redis,
    hasher,
    status,
    store,
    ...(metrics ? { metrics } : {}),
    ...(options.logger !== undefined ? { logger: options.logger } : {}),
  });
  const metricsServer: MetricsServer | null =
    metrics && config.metricsPort !== null ? await startMetricsServer(metrics, config.metricsPort) : null;
  logError = (error, context) => app.log.warn({ err: error, context }, 'background error');
  // Said once, at start: which ICMP mode serves the `icmp` field.
  app.log.info({ icmp: icmpMode.mode, detail: icmpMode.detail || undefined }, `icmp: ${icmpMode.mode}`);
  app.addHook('onClose', async () => {
    pinger?.close();
    await metricsServer?.close();
    await store.close();
    await redis?.quit();
  });
  return { app, store, status, hasher, metrics, metricsServer };
}
