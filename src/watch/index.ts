/**
 * Watches put together (docs/watches.md): the service the routes use, the check loop and
 * the delivery loop, and how they start and stop. The watched servers are resolved through the
 * targets' guard (TARGET_ALLOWLIST), webhooks through their own (WEBHOOK_ALLOWLIST).
 */
import type { Config } from '../config/index.js';
import type { Clock } from '../core/clock.js';
import type { WindowCounter } from '../core/rate-window.js';
import { AddressGuard, TargetResolver } from '../resolve/index.js';
import type { StatusLookup } from '../status/types.js';
import type { WatchStore } from '../store/watches/watch-store.js';
import { WatchChecker } from './checks.js';
import { DeliveryLoop } from './delivery.js';
import { WatchKeys } from './keys.js';
import { ServerLook } from './look.js';
import { WatchScheduler } from './scheduler.js';
import { WatchService } from './service.js';
import { WatchVerifier } from './verification.js';
import type { Tracer } from '../core/tracing.js';

export { WatchService, type NewWatchRequest, type WebhookKind } from './service.js';
export { WatchScheduler } from './scheduler.js';
export { DeliveryLoop } from './delivery.js';

/** Timings below a minute, for tests. */
export interface WatchTiming {
  /** Between two checks of a watch (default WATCH_INTERVAL_MINUTES). */
  intervalMs?: number;
  /** First retry of a failed delivery; each next one waits four times longer (default 30 s). */
  retryBaseMs?: number;
  /** First recheck after an undecided answer; each next one waits twice as long (default 10 s). */
  recheckMs?: number;
  /** Time between two ticks of the check loop (default 5 s). */
  tickMs?: number;
  /** Time between two dispatches of the delivery loop (default 1 s). */
  deliveryTickMs?: number;
  /** Makes verification tokens (default: random); tests give a fixed one that a DNS zone can hold. */
  verificationToken?: () => string;
}

export interface WatchParts {
  store: WatchStore;
  status: StatusLookup;
  clock: Clock;
  /** Counts the checks of the minute and each webhook host's deliveries (in Redis with REDIS_URL). */
  counter: WindowCounter;
  timing?: WatchTiming;
  onError?: (error: unknown, context: string) => void;
  /** Spans for webhook deliveries (src/core/tracing.ts). */
  tracer?: Tracer;
}

/** Time the loops get to finish on a stop, so that the history still buffered is written in time after them. */
export const WATCH_STOP_DEADLINE_MS = 3_000;
/** Newest events kept per watch, delivered or not. */
export const EVENTS_PER_WATCH = 20;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export function createWatches(config: Config, parts: WatchParts) {
  const { store, status, clock, timing = {}, onError } = parts;
  const settings = config.watches;
  const intervalMs = timing.intervalMs ?? settings.intervalMinutes * 60_000;
  const now = () => clock.now();
  const targets = new TargetResolver({ dnsServers: config.dnsServers, guard: new AddressGuard(config.targetAllowlist), now });
  const webhookGuard = new AddressGuard(settings.webhookAllowlist);
  const webhooks = { resolver: new TargetResolver({ dnsServers: config.dnsServers, guard: webhookGuard, now }), allowlist: webhookGuard };
  const keys = new WatchKeys(store, settings.secret);
  const look = new ServerLook(status, clock, config.pingTimeoutMs);
  const verifier = new WatchVerifier({ store, look, resolver: targets, clock, caps: settings, ...(onError ? { onError } : {}) });
  const scheduler = checkLoop(config, parts, { look, verifier, intervalMs });
  const deliveries = deliveryLoop(config, parts, { keys, webhooks });
  const service = new WatchService({
    store,
    keys,
    verifier,
    deliveries,
    look,
    webhooks,
    clock,
    settings,
    publicUrl: config.publicUrl,
    intervalMs,
    ...(timing.verificationToken ? { verificationToken: timing.verificationToken } : {}),
  });
  return {
    service,
    scheduler,
    deliveries,
    /** Starts both loops; WATCH_CHECKS_PER_MINUTE=0 leaves this instance out of checking and delivering. */
    start() {
      if (settings.checksPerMinute <= 0) return;
      scheduler.start();
      deliveries.start();
    },
    /** Starts nothing more (no test delivery either): the first step of a stop. */
    beginStop() {
      deliveries.beginStop();
    },
    /** Stops both loops within WATCH_STOP_DEADLINE_MS; deliveries still in flight then are cut off and sent again later. */
    async stop() {
      await Promise.all([scheduler.stop(WATCH_STOP_DEADLINE_MS), deliveries.stop(WATCH_STOP_DEADLINE_MS)]);
    },
  };
}

/** The check loop, with its checker and the bounds its maintenance keeps. */
function checkLoop(config: Config, parts: WatchParts, uses: { look: ServerLook; verifier: WatchVerifier; intervalMs: number }): WatchScheduler {
  const { store, clock, counter, timing = {}, onError } = parts;
  const settings = config.watches;
  const checker = new WatchChecker({
    store,
    look: uses.look,
    verifier: uses.verifier,
    clock,
    damping: config.damping,
    publicUrl: config.publicUrl,
    timing: { intervalMs: uses.intervalMs, recheckMs: timing.recheckMs ?? 10_000, proofGraceMs: settings.proofGraceDays * DAY },
  });
  return new WatchScheduler({
    checker,
    store,
    clock,
    checksPerMinute: settings.checksPerMinute,
    intervalMs: uses.intervalMs,
    counter,
    retention: {
      eventMaxAgeMs: settings.eventHours * HOUR,
      eventsPerWatch: EVENTS_PER_WATCH,
      logMaxAgeMs: settings.logDays * DAY,
      pausedMaxMs: settings.proofGraceDays * DAY,
    },
    ...(timing.tickMs !== undefined ? { tickMs: timing.tickMs } : {}),
    ...(onError ? { onError } : {}),
  });
}

/** The delivery loop over the webhooks' resolver and allowlist. */
function deliveryLoop(
  config: Config,
  parts: WatchParts,
  uses: { keys: WatchKeys; webhooks: { resolver: TargetResolver; allowlist: AddressGuard } },
): DeliveryLoop {
  const { store, clock, counter, timing = {}, onError } = parts;
  const settings = config.watches;
  return new DeliveryLoop({
    store,
    clock,
    keys: uses.keys,
    ...uses.webhooks,
    counter,
    settings: {
      attempts: settings.deliveryAttempts,
      timeoutMs: settings.deliveryTimeoutMs,
      concurrency: settings.deliveryConcurrency,
      perHostPerMinute: settings.deliveriesPerHostPerMinute,
    },
    ...(timing.retryBaseMs !== undefined ? { retryBaseMs: timing.retryBaseMs } : {}),
    ...(timing.deliveryTickMs !== undefined ? { tickMs: timing.deliveryTickMs } : {}),
    ...(onError ? { onError } : {}),
    ...(parts.tracer ? { tracer: parts.tracer } : {}),
  });
}

export type Watches = ReturnType<typeof createWatches>;
