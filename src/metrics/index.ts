/**
 * Prometheus metrics with prom-client, in a Registry of their own (the library's global
 * default registry stays empty, so two apps in one process never share or clash).
 *
 * Labels are bounded by construction: route templates (never the raw URL, an address or a
 * client), a fixed set of methods, status codes, editions, outcomes and states. Nothing here
 * sees a client IP or user agent.
 *
 * The HTTP layer and the status service feed it through small callbacks (`observeRequest`,
 * `observePing`, `observeCacheResult`); gauges whose value lives elsewhere (pings in flight,
 * the history write queue, Redis and database state) are read at scrape time from `sources`.
 */
import { PerformanceObserver, constants as perfConstants } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { WriterWorkKind } from '../store/sqlite/writer-work.js';
import type { StoreHealth } from '../store/types.js';

export type DependencyState = 'ok' | 'degraded' | 'down';

export interface MetricsSources {
  pingsInFlight?: () => number;
  /** The history store's queue and state; null when there is no store. */
  history?: () => StoreHealth | null;
  /** Redis state; null when Redis is not configured. */
  redis?: () => DependencyState | null;
}

export interface Metrics {
  readonly registry: Registry;
  readonly contentType: string;
  /** One answered HTTP request; `route` is the route template, null when no route matched. */
  observeRequest(route: string | null, method: string, statusCode: number, seconds: number): void;
  /** One performed ping (resolve, connect, query) and how it ended. */
  observePing(edition: string, online: boolean, seconds: number): void;
  /** How a status look-up was answered: from the cache, a fresh ping, or a stale success. */
  observeCacheResult(result: 'HIT' | 'MISS' | 'STALE'): void;
  /** A render or ping refused by the admission control (503 `overloaded`), and why. */
  observeShed(work: 'render' | 'ping', reason: 'event_loop_lag' | 'render_slots'): void;
  /** One unit of the SQLite writer's work (a group commit, a retention or vacuum step, a checkpoint), request to answer. */
  observeWriterWork(work: WriterWorkKind, seconds: number): void;
  /** The exposition text. */
  scrape(): Promise<string>;
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const STATES: DependencyState[] = ['ok', 'degraded', 'down'];
const EDITIONS = new Set(['java', 'legacy', 'bedrock']);

/** Seconds; from a cached answer (~1 ms) to a ping that uses its whole budget. */
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const PING_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Seconds; a retention step is meant to stay under 20 ms. */
const WRITER_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export function createMetrics(sources: MetricsSources = {}): Metrics {
  const registry = new Registry();
  // Process memory, CPU, handles and event-loop delay (nodejs_eventloop_lag_* from
  // perf_hooks.monitorEventLoopDelay), registered in our registry only.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });
  const requests = requestMetrics(registry);
  const pings = pingMetrics(registry, sources);
  const shed = shedMetric(registry);
  const writer = new Histogram({
    name: 'observer_sqlite_writer_duration_seconds',
    help: 'SQLite: time from sending a unit of work to the writer thread to its answer, by work (batch: a group commit; retention_step; vacuum_step; checkpoint).',
    labelNames: ['work'] as const,
    buckets: WRITER_BUCKETS,
    registers: [registry],
  });
  registerHistoryMetrics(registry, sources);
  registerLiveHeap(registry);
  return {
    registry,
    contentType: registry.contentType,
    observeRequest(route, method, statusCode, seconds) {
      const labels = {
        route: route ?? 'unmatched',
        method: METHODS.has(method) ? method : 'OTHER',
        status: String(statusCode),
      };
      requests.count.inc(labels);
      requests.seconds.observe(labels, seconds);
    },
    observePing(edition, online, seconds) {
      const labels = { edition: EDITIONS.has(edition) ? edition : 'other', outcome: online ? 'online' : 'offline' };
      pings.count.inc(labels);
      pings.seconds.observe(labels, seconds);
    },
    observeCacheResult(result) {
      pings.cacheResults.inc({ result });
    },
    observeShed(work, reason) {
      shed.inc({ work, reason });
    },
    observeWriterWork(work, seconds) {
      writer.observe({ work }, seconds);
    },
    scrape: () => registry.metrics(),
  };
}

/** A counter of events and a histogram of their durations, with the same labels. */
function countAndDuration<L extends string>(
  registry: Registry,
  count: { name: string; help: string },
  duration: { name: string; help: string; buckets: number[] },
  labelNames: readonly L[],
) {
  return {
    count: new Counter({ ...count, labelNames, registers: [registry] }),
    seconds: new Histogram({ ...duration, labelNames, registers: [registry] }),
  };
}

/** Requests by route template, method and status code: a count and a duration histogram. */
function requestMetrics(registry: Registry) {
  return countAndDuration(
    registry,
    { name: 'observer_http_requests_total', help: 'HTTP requests answered, by route template, method and status code.' },
    {
      name: 'observer_http_request_duration_seconds',
      help: 'Time from receiving a request to the end of its response, by route template, method and status code.',
      buckets: REQUEST_BUCKETS,
    },
    ['route', 'method', 'status'],
  );
}

/** Pings by edition and outcome, how look-ups were answered, and the pings in flight. */
function pingMetrics(registry: Registry, sources: MetricsSources) {
  const { count, seconds } = countAndDuration(
    registry,
    {
      name: 'observer_pings_total',
      help: 'Pings performed (resolve, connect, query), by edition (java, legacy, bedrock) and outcome (online, offline).',
    },
    { name: 'observer_ping_duration_seconds', help: 'Duration of a ping from resolution to answer or failure, by edition and outcome.', buckets: PING_BUCKETS },
    ['edition', 'outcome'],
  );
  const cacheResults = new Counter({
    name: 'observer_status_cache_results_total',
    help: 'Status look-ups by how they were answered: HIT (fresh cache), MISS (a ping), STALE (last success).',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  for (const result of ['HIT', 'MISS', 'STALE']) cacheResults.inc({ result }, 0);
  new Gauge({
    name: 'observer_pings_in_flight',
    help: 'Pings in flight right now (requests sharing a ping count once).',
    registers: [registry],
    collect() {
      this.set(sources.pingsInFlight?.() ?? 0);
    },
  });
  return { count, seconds, cacheResults };
}

/** Work refused by the admission control, by kind and reason; every pair starts at 0. */
function shedMetric(registry: Registry) {
  const shed = new Counter({
    name: 'observer_shed_total',
    help: 'Renders and pings refused with 503 overloaded (load shedding), by work (render, ping) and reason (event_loop_lag, render_slots).',
    labelNames: ['work', 'reason'] as const,
    registers: [registry],
  });
  for (const work of ['render', 'ping']) for (const reason of ['event_loop_lag', 'render_slots']) shed.inc({ work, reason }, 0);
  return shed;
}

/** The history store's queue, its overflow and its state, and Redis's state, read at scrape time. */
function registerHistoryMetrics(registry: Registry, sources: MetricsSources): void {
  const readHistory = (): StoreHealth | null => {
    try {
      return sources.history?.() ?? null;
    } catch {
      return { state: 'down', buffered: 0, dropped: 0 };
    }
  };
  new Gauge({
    name: 'observer_history_queue_depth',
    help: 'History rows (checks, counters, look-ups) waiting to be written to the database.',
    registers: [registry],
    collect() {
      this.set(readHistory()?.buffered ?? 0);
    },
  });
  totalCounter(
    registry,
    'observer_history_dropped_total',
    'History rows dropped because the write buffer was full (database outage longer than the buffer).',
    () => readHistory()?.dropped ?? 0,
  );
  totalCounter(
    registry,
    'observer_history_dead_letter_total',
    'History batches the database kept refusing while it took other writes, set aside in the dead_batches table.',
    () => readHistory()?.deadLettered ?? 0,
  );
  totalCounter(
    registry,
    'observer_history_write_failures_total',
    'Attempts to write a batch of history rows that failed (the rows stay queued and are tried again).',
    () => readHistory()?.failedWrites ?? 0,
  );
  registerDependencyState(registry, () => [
    ['database', readHistory()?.state ?? null],
    ['redis', sources.redis?.() ?? null],
  ]);
}

/** A counter that follows a total kept since start elsewhere, read at scrape time. */
function totalCounter(registry: Registry, name: string, help: string, total: () => number): void {
  let seen = 0;
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const now = total();
      if (now > seen) this.inc(now - seen);
      seen = Math.max(seen, now);
    },
  });
}

/** Heap used read just after the last full collection; 0 before the first. */
let liveHeapBytes = 0;
let liveHeapObserver: PerformanceObserver | null = null;

/**
 * The heap that survived the last full (mark-compact) collection: what the process holds,
 * without the garbage `nodejs_heap_size_used_bytes` also counts until the next collection,
 * so that growth seen in it is memory kept, not memory not yet collected. Read when V8
 * reports the collection, a moment after it (what was allocated since is counted too). One
 * observer for the process, started with the first registry.
 */
function registerLiveHeap(registry: Registry): void {
  if (liveHeapObserver === null) {
    liveHeapObserver = new PerformanceObserver((list) => {
      const major = list.getEntries().some((entry) => (entry as { detail?: { kind?: number } }).detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR);
      if (major) liveHeapBytes = getHeapStatistics().used_heap_size;
    });
    liveHeapObserver.observe({ entryTypes: ['gc'] });
  }
  new Gauge({
    name: 'observer_heap_live_bytes',
    help: 'Heap used just after the last full garbage collection (the memory kept, without garbage waiting for the next collection); 0 before the first.',
    registers: [registry],
    collect() {
      this.set(liveHeapBytes);
    },
  });
}

/** One gauge per dependency and state: 1 for its current state, 0 for the others. */
function registerDependencyState(registry: Registry, current: () => Array<['database' | 'redis', DependencyState | null]>): void {
  new Gauge({
    name: 'observer_dependency_state',
    help: 'State of each configured dependency: 1 for its current state (ok, degraded, down), 0 for the others.',
    labelNames: ['dependency', 'state'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [dependency, state] of current()) {
        if (state === null) continue;
        for (const each of STATES) this.set({ dependency, state: each }, each === state ? 1 : 0);
      }
    },
  });
}
