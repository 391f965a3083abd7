/** The status service and its default wiring (real resolver, guard, protocol clients). */
import type { Config } from '../config/index.js';
import type { Clock } from '../core/clock.js';
import { connectTcp, connectUdp, pingBedrock, pingJava, pingLegacy, queryServer, type ProbeOptions } from '../protocol/index.js';
import { AddressGuard, TargetResolver } from '../resolve/index.js';
import type { Store } from '../store/types.js';
import { MemoryStatusCache, type StatusCache } from './cache.js';
import { StatusService, type StatusObserver, type StatusServiceDeps } from './service.js';
import { NewServerAllowance, TargetBudget } from './budgets.js';
import type { WindowCounter } from '../core/rate-window.js';
import { cacheBudget } from '../core/cache-budget.js';
import type { AbortLike } from '../core/deadline.js';
import { NO_TRACER, type Tracer } from '../core/tracing.js';
import { TracedStatusService, tracedConnectors } from './tracing.js';

export { StatusService, STALE_WHILE_REVALIDATE_MS, SATURATION_STALE_MS } from './service.js';
export type { StatusServiceDeps, PingFunction, ProbeTarget, StatusObserver } from './service.js';
export { MemoryStatusCache, type StatusCache, type CacheEntry, type StoredStatus } from './cache.js';
export { serverId, uuidV5 } from './server-id.js';
export type { StatusAnswer, StatusLookup, CacheState, LookupOptions, QueryRequest } from './types.js';
export { Blocklist, blocklistCandidates, parseBlocklist, withBlockedFlag } from './blocklist.js';
export { BackgroundRefresher } from './refresher.js';

export interface StatusServiceOptions {
  config: Pick<
    Config,
    | 'cacheMemoryMb'
    | 'dnsServers'
    | 'targetAllowlist'
    | 'statusCacheTtlSeconds'
    | 'pingTimeoutMs'
    | 'maxConcurrentPings'
    | 'lookupMaxAddresses'
    | 'targetPingsPerMinute'
    | 'newServersPerClientPerDay'
    | 'damping'
  >;
  clock: Clock;
  store?: Store | null;
  cache?: StatusCache;
  /** ICMP echo (compose.ts wires an IcmpPinger's `echo`); none when unset or null. */
  icmp?: ((ip: string, signal: AbortLike) => Promise<boolean | null>) | null;
  onError?: (error: unknown, context: string) => void;
  /** Metrics hooks (pings, cache results). */
  observe?: StatusObserver;
  /**
   * Where pings per target IP (TARGET_PINGS_PER_MINUTE) and new servers per client
   * (NEW_SERVERS_PER_CLIENT_PER_DAY) are counted: the rate limiter's memory or Redis store;
   * unset, neither is limited.
   */
  budgetCounter?: WindowCounter;
  /** A span for each look-up and its steps (./tracing.ts); none without it. */
  tracer?: Tracer;
}

export function createStatusService(options: StatusServiceOptions): StatusService {
  const { config, clock } = options;
  const tracer = options.tracer ?? NO_TRACER;
  const guard = new AddressGuard(config.targetAllowlist);
  const budget = cacheBudget(config.cacheMemoryMb);
  // With traces, the protocol clients connect through connectors that open a span each.
  const probe: ProbeOptions | undefined = tracer.enabled ? tracedConnectors(tracer, { connectTcp, connectUdp }) : undefined;
  const deps: StatusServiceDeps = {
    resolver: new TargetResolver({
      dnsServers: config.dnsServers,
      guard,
      now: () => clock.now(),
      maxAddresses: config.lookupMaxAddresses,
      negativeCacheBytes: budget.missingNames,
      tracer,
    }),
    ping: probe
      ? { java: (target) => pingJava(target, probe), legacy: (target) => pingLegacy(target, probe), bedrock: (target) => pingBedrock(target, probe) }
      : { java: pingJava, legacy: pingLegacy, bedrock: pingBedrock },
    queryServer: (target) => queryServer(target, probe),
    ...(options.icmp ? { icmp: options.icmp } : {}),
    cache: options.cache ?? new MemoryStatusCache({ maxBytes: budget.statuses, now: () => clock.now() }),
    store: options.store ?? null,
    clock,
    ttlSeconds: config.statusCacheTtlSeconds,
    pingTimeoutMs: config.pingTimeoutMs,
    maxConcurrentPings: config.maxConcurrentPings,
    damping: config.damping,
    ...(options.onError ? { onError: options.onError } : {}),
    ...(options.observe ? { observe: options.observe } : {}),
    ...(options.budgetCounter ? budgets(options.budgetCounter, config, options.onError) : {}),
  };
  return tracer.enabled ? new TracedStatusService(deps, tracer) : new StatusService(deps);
}

function budgets(
  counter: WindowCounter,
  config: StatusServiceOptions['config'],
  onError: StatusServiceOptions['onError'],
): Pick<StatusServiceDeps, 'targetBudget' | 'newServers'> {
  const report = (error: unknown) => onError?.(error, 'budget counter');
  return {
    targetBudget: new TargetBudget(counter, config.targetPingsPerMinute, report),
    newServers: new NewServerAllowance(counter, config.newServersPerClientPerDay, report),
  };
}
