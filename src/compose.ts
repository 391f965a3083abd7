/**
 * Builds Observer's dependencies from its configuration: the one place that decides which
 * implementation serves (SQLite or PostgreSQL, memory or Redis). main.ts starts what this
 * returns; tests build the same thing.
 */
import { getHeapStatistics } from 'node:v8';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from './config/index.js';
import { cacheBudget } from './core/cache-budget.js';
import { ClientHasher } from './core/client-hash.js';
import { systemClock, type Clock } from './core/clock.js';
import { createTracer } from './core/create-tracer.js';
import type { Tracer } from './core/tracing.js';
import { buildApp, type AppDeps } from './http/app.js';
import { startMetricsServer, type MetricsServer } from './http/metrics.js';
import { serviceLogger } from './http/request-logger.js';
import { MemoryRateLimitStore, RedisRateLimitStore } from './http/rate-limit.js';
import type { Metrics, MetricsSources } from './metrics/index.js';
import { IcmpPinger } from './resolve/index.js';
import type { DependencyHealth } from './http/routes/health.js';
import { RedisDailySecret } from './redis/daily-secret.js';
import { SharedRedis } from './redis/shared-redis.js';
import { BackgroundRefresher, Blocklist, MemoryStatusCache, createStatusService, withBlockedFlag, type StatusService } from './status/index.js';
import { RedisStatusCache } from './status/redis-cache.js';
import { startStore, type MigrationEvent, type RetentionReport, type StoreOptions } from './store/index.js';
import type { Store } from './store/types.js';
import { createWatches, type WatchTiming } from './watch/index.js';
import { createVoteService } from './vote/service.js';
import type { AbortLike } from './core/deadline.js';

export interface ComposeOptions {
  clock?: Clock;
  logger?: AppDeps['logger'];
  /** Requests slower than this are logged as warnings (default 1000 ms); for tests. */
  slowRequestMs?: number;
  /** ICMP echo; an IcmpPinger (raw sockets) per the ICMP setting unless given (null turns it off). */
  icmp?: ((ip: string, signal: AbortLike) => Promise<boolean | null>) | null;
  /** The history store's group commit (window, rows per window), for tests; HISTORY_BUFFER_MAX still bounds it. */
  writes?: NonNullable<StoreOptions['writes']>;
  /** Watch timing below a minute, for tests: check interval, retries, rechecks, ticks of the loops. */
  watchTiming?: WatchTiming;
  /**
   * Return before the schema migrations run; the caller runs them with `migrate()` once the
   * app listens (main.ts). Without it they are done before composeApp resolves.
   */
  migrateLater?: boolean;
}

/**
 * Where background work reports: the service's log (made before the store, so that a migration
 * run before the service listens is logged too); stderr for errors when logging is off.
 */
function backgroundLog(log: FastifyBaseLogger | null) {
  return {
    error: (error: unknown, context: string) => {
      if (log) log.warn({ err: error, context }, 'background error');
      else process.stderr.write(`observer: ${context}: ${String(error)}\n`);
    },
    redis: (state: string, reason: string) => {
      if (log) log[state === 'ok' ? 'info' : 'warn']({ reason }, state === 'ok' ? 'redis ok: shared mode' : 'redis down: local mode');
      else process.stderr.write(`observer: redis ${state}: ${reason}\n`);
    },
    /** A retention pass ended: what it removed and how long it took. */
    retention: (report: RetentionReport) => log?.info({ retention: report }, 'retention pass done'),
    /** A migration's statements (debug) and committed transactions (info). */
    migration: (event: MigrationEvent) => {
      if (event.kind === 'statement') log?.debug({ migration: event.migration, step: event.step, statement: event.statement }, 'migration statement done');
      else if (event.kind === 'committed') {
        const { migration, step, progress, ms, rows } = event;
        log?.info({ migration, step, progress: Math.round(progress * 1000) / 1000, ms, ...(rows === undefined ? {} : { rows }) }, 'migration step committed');
      } else log?.info({ migration: event.migration }, 'another instance is migrating the database: waiting for its turn');
    },
  };
}
type BackgroundLog = ReturnType<typeof backgroundLog>;

/** Shared Redis with REDIS_URL; the instance starts on its local fallbacks if Redis does not answer at once. */
async function connectRedis(config: Config, log: BackgroundLog): Promise<SharedRedis | null> {
  if (!config.redisUrl) return null;
  const redis = new SharedRedis(config.redisUrl, {
    commandTimeoutMs: config.redisCommandTimeoutMs,
    onStateChange: (state, reason) => log.redis(state, reason),
  });
  await redis.ready(1_000);
  return redis;
}

/** One pinger for the process, two raw sockets shared by every echo, per the ICMP setting; or the one given; or none. */
function icmpEcho(config: Config, options: ComposeOptions, log: BackgroundLog) {
  const pinger =
    options.icmp === undefined && config.icmp === 'auto'
      ? new IcmpPinger({ timeoutMs: Math.min(2000, config.pingTimeoutMs), onError: (error) => log.error(error, 'icmp') })
      : null;
  const mode = pinger?.start() ?? { mode: options.icmp === undefined ? 'off' : 'injected', detail: '' };
  const echo = options.icmp !== undefined ? options.icmp : pinger && ((ip: string, signal: AbortLike) => pinger.echo(ip, signal));
  return { pinger, mode, echo };
}

/**
 * Metrics only when they are served (METRICS_TOKEN or METRICS_PORT): otherwise no cost per
 * request, and prom-client is not loaded.
 */
async function metricsFor(config: Config, sources: MetricsSources): Promise<Metrics | null> {
  if (config.metricsToken === null && config.metricsPort === null) return null;
  return (await import('./metrics/index.js')).createMetrics(sources);
}

/** The app with every route, its store, status service and (with REDIS_URL) Redis; closing the app closes them. */
export async function composeApp(config: Config, options: ComposeOptions = {}) {
  const clock = options.clock ?? systemClock;
  const serviceLog = serviceLogger(config.logLevel, options.logger);
  const log = backgroundLog(serviceLog);
  // OpenTelemetry is loaded only with an OTLP endpoint (src/core/tracing.ts).
  const tracer = await createTracer(config.tracing, (error) => log.error(error, 'traces'));
  const redis = await connectRedis(config, log);
  // Metrics come after the store: until then, the writer's work is not observed.
  let observeWriterWork: NonNullable<StoreOptions['onWriterWork']> = () => {};
  const { store, migrate } = await startStore(config, clock, {
    onError: (error) => log.error(error, 'history store'),
    onRetention: (report) => log.retention(report),
    onMigration: (event) => log.migration(event),
    writes: { ...options.writes, maxRows: config.historyBufferMax },
    tracer,
    onWriterWork: (work) => observeWriterWork(work),
  });
  if (!options.migrateLater) await migrate();
  const icmp = icmpEcho(config, options, log);
  const hasher = new ClientHasher(clock, redis ? new RedisDailySecret(redis) : null, (error) => log.error(error, 'daily secret'));
  await hasher.ready();
  const metrics = await metricsFor(config, {
    pingsInFlight: () => status.activePings,
    history: () => store.health(),
    redis: () => redis?.health() ?? null,
  });
  if (metrics) observeWriterWork = (work) => metrics.observeWriterWork(work.kind, work.ms / 1000);
  const { status, budgetCounter } = statusService(config, { clock, store, redis, metrics, echo: icmp.echo, log, tracer });
  const { blocklist, refresher, startBackground } = backgroundWork(config, { status, clock, redis, log });
  const watchWork = createWatches(config, {
    store: store.watches,
    status,
    clock,
    counter: budgetCounter,
    ...(options.watchTiming ? { timing: options.watchTiming } : {}),
    onError: (error, context) => log.error(error, context),
    tracer,
  });
  const watches = watchWork.service;
  const app = await buildApp({
    config,
    watches,
    ...(config.votesEnabled ? { votes: createVoteService(config, budgetCounter, (error) => log.error(error, 'vote target budget')) } : {}),
    clock,
    redis,
    hasher,
    status: withBlockedFlag(refresher.tracking(status), blocklist),
    store,
    recorded: (serverId) => (serverId === undefined ? status.recordedSoFar() : status.recordedFor(serverId)),
    ...(metrics ? { metrics } : {}),
    health: () => dependencyHealth(store, redis),
    tracer,
    ...(options.logger !== undefined ? { logger: options.logger } : {}),
    log: serviceLog,
    ...(options.slowRequestMs !== undefined ? { slowRequestMs: options.slowRequestMs } : {}),
  });
  const metricsServer: MetricsServer | null =
    metrics && config.metricsPort !== null ? await startMetricsServer(metrics, config.metricsPort) : null;
  warnOnCacheBudget(app, config);
  // Said once, at start: which ICMP mode serves the `icmp` field.
  app.log.info({ icmp: icmp.mode.mode, detail: icmp.mode.detail || undefined }, `icmp: ${icmp.mode.mode}`);
  // Before the server waits for the requests in flight: a test delivery to a slow webhook must not hold it.
  app.addHook('preClose', async () => watchWork.beginStop());
  app.addHook('onClose', async () => {
    blocklist?.stop();
    // Within a deadline, leaving the history buffer its time to be written below.
    await watchWork.stop();
    await refresher.stop();
    await status.recorded();
    icmp.pinger?.close();
    budgetCounter.close();
    await metricsServer?.close();
    await store.close();
    await redis?.close();
    // Last: the spans of everything above are sent.
    await tracer.close();
  });
  // Watches are read and written in the database: they start once its schema is current.
  const start = async () => {
    await startBackground();
    await migrate().then(
      () => watchWork.start(),
      () => {},
    );
  };
  return {
    app,
    store,
    status,
    hasher,
    redis,
    metrics,
    tracer,
    metricsServer,
    blocklist,
    refresher,
    watches,
    watchScheduler: watchWork.scheduler,
    watchDeliveries: watchWork.deliveries,
    startBackground: start,
    /** Applies the schema migrations (done already unless `migrateLater`); rejects if they fail or a stop ends them. */
    migrate,
  };
}

/**
 * The status service, with its caches in Redis when shared, and the counter of its budgets:
 * pings per target IP and new servers per client, counted like the rate limits (in Redis
 * across instances, else here).
 */
function statusService(
  config: Config,
  parts: { clock: Clock; store: Store; redis: SharedRedis | null; metrics: Metrics | null; echo: ReturnType<typeof icmpEcho>['echo']; log: BackgroundLog; tracer: Tracer },
) {
  const { clock, store, redis, metrics, echo, log, tracer } = parts;
  const budget = cacheBudget(config.cacheMemoryMb);
  const budgetCounter = redis
    ? new RedisRateLimitStore(redis, 'observer:', () => clock.now(), { maxBytes: budget.budgets })
    : new MemoryRateLimitStore(() => clock.now(), { maxBytes: budget.budgets });
  // With Redis, the local copy that serves while Redis is away holds the statuses' share.
  const local = () => new MemoryStatusCache({ maxBytes: budget.statuses, now: () => clock.now() });
  const status = createStatusService({
    config,
    clock,
    store,
    budgetCounter,
    ...(metrics ? { observe: { ping: (mode, online, seconds) => metrics.observePing(mode, online, seconds), cacheResult: (result) => metrics.observeCacheResult(result) } } : {}),
    ...(redis ? { cache: new RedisStatusCache(redis, { now: () => clock.now(), local: local() }) } : {}),
    icmp: echo,
    onError: (error, context) => log.error(error, context),
    tracer,
  });
  return { status, budgetCounter };
}

/**
 * Mojang's blocklist (with BLOCKLIST_SOURCE) and the background refresher, and the start of
 * their work, which main.ts calls once the app listens.
 */
function backgroundWork(config: Config, parts: { status: StatusService; clock: Clock; redis: SharedRedis | null; log: BackgroundLog }) {
  const { status, clock, redis, log } = parts;
  const blocklist = config.blocklistSource
    ? new Blocklist({
        source: config.blocklistSource,
        refreshMinutes: config.blocklistRefreshMinutes,
        onError: (error, context) => log.error(error, context),
      })
    : null;
  const refresher = new BackgroundRefresher({
    status,
    clock,
    windowMinutes: config.refreshWindowMinutes,
    pingsPerMinute: Math.max(1, config.refreshPingsPerMinute),
    ttlSeconds: config.statusCacheTtlSeconds,
    redis,
    maxBytes: cacheBudget(config.cacheMemoryMb).refresher,
    onError: (error, context) => log.error(error, context),
  });
  const startBackground = async () => {
    await blocklist?.start();
    if (config.refreshPingsPerMinute > 0) refresher.start();
  };
  return { blocklist, refresher, startBackground };
}

/** The caches' budget must leave the heap room for everything else (docs/performance.md#memory). */
function warnOnCacheBudget(app: FastifyInstance, config: Config): void {
  const heapLimit = getHeapStatistics().heap_size_limit;
  if (config.cacheMemoryMb * 1024 * 1024 <= heapLimit / 3) return;
  app.log.warn(
    { cacheMemoryMb: config.cacheMemoryMb, heapLimitMb: Math.round(heapLimit / 1024 / 1024) },
    'CACHE_MEMORY_MB is more than a third of the heap limit: raise --max-old-space-size (NODE_OPTIONS) or lower CACHE_MEMORY_MB',
  );
}

/** The health route's extra fields: database, Redis (`disabled` without REDIS_URL), write buffer. */
function dependencyHealth(store: Store, redis: SharedRedis | null): DependencyHealth {
  const storeHealth = store.health();
  return {
    database: storeHealth.state,
    write_buffer: storeHealth.buffered,
    write_buffer_dropped: storeHealth.dropped,
    redis: redis ? redis.health() : 'disabled',
    migration: store.migration(),
  };
}
