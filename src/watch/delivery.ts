/**
 * The delivery loop (docs/watches.md, "Deliveries"), apart from the check loop: every tick it
 * starts the due events in free slots (WATCH_DELIVERY_CONCURRENCY per instance) and lets them
 * run; a slow webhook holds its own slot and nothing else. Slots are shared out: one event of
 * a watch at a time, PER_HOST_IN_FLIGHT per webhook host, a quarter of the slots per client.
 *
 * Each attempt first takes a lease on its event with a fencing token, just before it is sent,
 * for longer than the attempt can last (DNS deadline, WATCH_DELIVERY_TIMEOUT_MS, a margin);
 * only the lease's holder can finish the attempt. So an event is sent once whatever the
 * number of instances, unless an instance stops mid-attempt (a crash, a stop's deadline): the
 * event is then sent again, with the same `webhook-id`.
 *
 * No relay: every webhook host has a budget of deliveries a minute
 * (WATCH_DELIVERIES_PER_HOST_PER_MINUTE, counted across instances with Redis); an event over
 * it waits for the host's next minute without losing an attempt. A test delivery is allowed
 * once a minute per watch.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../core/clock.js';
import { ObserverError } from '../core/errors.js';
import { NO_TRACER, type Tracer, type TraceSpan } from '../core/tracing.js';
import { rateLimitFields, secondsLeft, type WindowCounter } from '../core/rate-window.js';
import type { DeliveryAttempt, DueEvent, WatchRow, WatchStore } from '../store/watches/watch-store.js';
import type { WatchKeys } from './keys.js';
import { discordBody, type WatchEventBody } from './payload.js';
import { deliveryHeaders, eventId } from './signature.js';
import { DNS_DEADLINE_MS } from './verification.js';
import {
  parseWebhookUrl,
  postWebhook,
  resolveWebhook,
  retryable,
  webhookPort,
  type AttemptResult,
  type WebhookAllowlist,
  type WebhookResolver,
  type WebhookResult,
} from './webhook.js';

export interface DeliverySettings {
  /** WATCH_DELIVERY_ATTEMPTS */
  attempts: number;
  /** WATCH_DELIVERY_TIMEOUT_MS */
  timeoutMs: number;
  /** WATCH_DELIVERY_CONCURRENCY */
  concurrency: number;
  /** WATCH_DELIVERIES_PER_HOST_PER_MINUTE */
  perHostPerMinute: number;
}

export interface DeliveryOptions {
  store: WatchStore;
  clock: Clock;
  keys: WatchKeys;
  /** The webhooks' resolver and allowlist (WEBHOOK_ALLOWLIST). */
  resolver: WebhookResolver;
  allowlist: WebhookAllowlist;
  /** Counts each webhook host's deliveries of the minute (in Redis with REDIS_URL). */
  counter: WindowCounter;
  settings: DeliverySettings;
  /** First retry of a failed delivery; each next one waits four times longer (default 30 s). */
  retryBaseMs?: number;
  /** Time between two dispatches (default 1 s). */
  tickMs?: number;
  onError?: (error: unknown, context: string) => void;
  /** A `webhook.deliver` span for each attempt; none without it. */
  tracer?: Tracer;
}

/** Attempts kept in a watch's delivery log. */
export const DELIVERY_LOG_SIZE = 20;
/** The longest wait between two attempts of one delivery. */
const RETRY_MAX_MS = 60 * 60_000;
/** Beyond the attempt's own deadlines, how long its lease lasts (room for clock skew between instances). */
const LEASE_MARGIN_MS = 10_000;
/** Attempts in flight at once to one webhook host, per instance. */
const PER_HOST_IN_FLIGHT = 2;
/** Test deliveries of one watch: one a minute. */
export const TEST_GAP_MS = 60_000;

interface InFlight {
  watchId: string;
  host: string;
  client: string;
}

export class DeliveryLoop {
  private readonly inFlight = new Map<Promise<void>, InFlight>();
  /** Aborted at the stop's deadline: cuts off the attempts still in flight. */
  private readonly stopping = new AbortController();
  /** Aborted as the stop begins: test deliveries hold an HTTP request, which a stop waits for. */
  private readonly testsStopping = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  /** False once the instance stops: no test delivery starts then. */
  private accepting = true;
  private dispatching: Promise<void> | undefined;
  private readonly retryBaseMs: number;
  private readonly perClient: number;

  constructor(private readonly options: DeliveryOptions) {
    this.retryBaseMs = options.retryBaseMs ?? 30_000;
    this.perClient = Math.max(1, Math.floor(options.settings.concurrency / 4));
  }

  start(): void {
    if (this.timer !== undefined || this.stopping.signal.aborted) return;
    this.timer = setInterval(() => {
      this.dispatching ??= this.tick()
        .catch((error: unknown) => this.options.onError?.(error, 'watch deliveries'))
        .finally(() => (this.dispatching = undefined));
    }, this.options.tickMs ?? 1_000);
    this.timer.unref();
  }

  /** Starts no more attempts (and refuses test deliveries) from now on. */
  beginStop(): void {
    this.accepting = false;
    this.testsStopping.abort();
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Stops: attempts in flight get until `deadlineMs`, then are cut off; a cut-off event gets
   * its lease back without losing an attempt and is sent again later (by this instance after a
   * restart, or another one).
   */
  async stop(deadlineMs = 3_000): Promise<void> {
    this.beginStop();
    const settled = () => Promise.all([this.dispatching, ...this.inFlight.keys()]);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([settled(), new Promise((resolve) => (timer = setTimeout(resolve, deadlineMs)))]);
    clearTimeout(timer);
    this.stopping.abort();
    await settled();
  }

  /** Starts the due events that fit in the free slots. */
  async tick(): Promise<void> {
    const { store, clock, settings } = this.options;
    const free = settings.concurrency - this.inFlight.size;
    if (free <= 0 || this.stopping.signal.aborted) return;
    const due = await store.dueEvents(clock.now(), free * 4 + this.inFlight.size);
    for (const event of due) {
      if (this.inFlight.size >= settings.concurrency || this.stopping.signal.aborted) break;
      const slot: InFlight = { watchId: event.watch_id, host: hostOf(event.webhook_url), client: event.client_hash };
      if (!this.mayStart(slot)) continue;
      const task: Promise<void> = this.deliver(event, slot.host)
        .catch((error: unknown) => this.options.onError?.(error, 'watch delivery'))
        .finally(() => this.inFlight.delete(task));
      this.inFlight.set(task, slot);
    }
  }

  /** Waits for the attempts in flight (tests). */
  async settled(): Promise<void> {
    await Promise.all([this.dispatching, ...this.inFlight.keys()]);
  }

  private mayStart(slot: InFlight): boolean {
    let host = 0;
    let client = 0;
    for (const other of this.inFlight.values()) {
      if (other.watchId === slot.watchId) return false;
      if (other.host === slot.host) host += 1;
      if (other.client === slot.client) client += 1;
    }
    return host < PER_HOST_IN_FLIGHT && client < this.perClient;
  }

  /** One attempt of an event under a fresh lease. */
  private async deliver(event: DueEvent, host: string): Promise<void> {
    const { store, clock, settings } = this.options;
    const token = randomUUID();
    const leasedAt = clock.now();
    if (!(await store.leaseEvent(event, leasedAt, leasedAt + DNS_DEADLINE_MS + settings.timeoutMs + LEASE_MARGIN_MS, token))) return;
    const watch = await store.get(event.watch_id);
    if (!watch) return;
    const wait = await this.hostBudgetWait(host);
    if (wait !== null) {
      await store.releaseLease(event, token, clock.now() + wait);
      return;
    }
    const result = await this.send(watch, event.body, eventId(watch.id, event.sequence), this.stopping.signal);
    if (this.stopping.signal.aborted && result.result === 'failed') {
      await store.releaseLease(event, token, clock.now());
      return;
    }
    const attempt = event.attempts + 1;
    const now = clock.now();
    const log: DeliveryAttempt = { watch_id: watch.id, sequence: event.sequence, kind: event.kind, attempt, at: now, status_code: result.statusCode, error: logged(result.result) };
    const next =
      result.result === 'delivered'
        ? { outcome: 'delivered' as const }
        : attempt >= settings.attempts || !retryable(result)
          ? { outcome: 'gave_up' as const }
          : { retryAt: now + Math.min(RETRY_MAX_MS, this.retryBaseMs * 4 ** (attempt - 1)) };
    if (!(await store.finishAttempt(log, next, DELIVERY_LOG_SIZE, token))) {
      this.options.onError?.(new Error('a delivery outlived its lease; its holder now records it'), 'watch delivery');
    }
  }

  /**
   * One test delivery to a verified watch's webhook (the body made by `body` once it may go),
   * logged like the others (sequence 0) under an id of its own. 429 `test_rate_limited` within
   * a minute of the last, 429 `webhook_rate_limited` past the host's budget.
   */
  async test(watch: WatchRow, body: () => Promise<string>): Promise<WebhookResult> {
    const { store, clock } = this.options;
    if (!this.accepting) throw new ObserverError('shutting_down', 503, 'Observer is restarting. Please retry shortly.', { headers: { 'Retry-After': '5' } });
    const now = clock.now();
    if (!(await store.claimTest(watch.id, now, TEST_GAP_MS))) {
      const resetMs = Math.max(1_000, (watch.last_test_at ?? now) + TEST_GAP_MS - now);
      throw new ObserverError('test_rate_limited', 429, `A watch sends at most one test delivery a minute. Retry in ${secondsLeft(resetMs)} seconds.`, {
        headers: { ...rateLimitFields('watch-test', 1, TEST_GAP_MS, { count: 2, resetMs }), 'Retry-After': String(secondsLeft(resetMs)) },
      });
    }
    const host = hostOf(watch.webhook_url);
    const wait = await this.hostBudgetWait(host);
    if (wait !== null) {
      const { perHostPerMinute } = this.options.settings;
      throw new ObserverError('webhook_rate_limited', 429, `Observer sends at most ${perHostPerMinute} deliveries a minute to one webhook host. Retry in ${secondsLeft(wait)} seconds.`, {
        headers: { ...rateLimitFields('webhook-host', perHostPerMinute, 60_000, { count: perHostPerMinute + 1, resetMs: wait }), 'Retry-After': String(secondsLeft(wait)) },
      });
    }
    const result = await this.send(watch, await body(), `${watch.id}_test_${randomUUID()}`, this.testsStopping.signal);
    await store.logAttempt({ watch_id: watch.id, sequence: 0, kind: 'test', attempt: 1, at: now, status_code: result.statusCode, error: logged(result.result) }, DELIVERY_LOG_SIZE);
    return result;
  }

  /** Null when the host's budget has room for one more delivery this minute; else how long until it has. */
  private async hostBudgetWait(host: string): Promise<number | null> {
    const { counter, settings } = this.options;
    try {
      const counted = await counter.hit(`webhook-host:${host}`, 60_000, settings.perHostPerMinute);
      return counted.count > settings.perHostPerMinute ? Math.max(1_000, counted.resetMs) : null;
    } catch (error) {
      this.options.onError?.(error, 'webhook budget');
      return null;
    }
  }

  /**
   * One attempt, in its span when traces are on: the webhook's host and port, never its URL
   * (a Discord webhook's path is its secret).
   */
  private send(watch: WatchRow, body: string, id: string, stop: AbortSignal): Promise<WebhookResult> {
    const tracer = this.options.tracer ?? NO_TRACER;
    if (!tracer.enabled) return this.sendNow(watch, body, id, stop);
    const work = async (span: TraceSpan) => {
      span.set('http.request.method', 'POST');
      span.set('observer.webhook.kind', watch.webhook_kind);
      const url = URL.parse(watch.webhook_url);
      if (url) {
        span.set('server.address', url.hostname);
        span.set('server.port', webhookPort(url));
      }
      const result = await this.sendNow(watch, body, id, stop);
      if (result.statusCode !== null) span.set('http.response.status_code', result.statusCode);
      span.set('observer.webhook.result', result.result);
      if (result.result !== 'delivered') span.fail(result.result);
      return result;
    };
    return tracer.span('webhook.deliver', work, { kind: 'client' });
  }

  /** POSTs an event body in the watch's format; DNS and the guard are consulted anew each time. */
  private async sendNow(watch: WatchRow, body: string, id: string, stop: AbortSignal): Promise<WebhookResult> {
    const { resolver, allowlist, keys, settings } = this.options;
    let target;
    try {
      target = await resolveWebhook(parseWebhookUrl(watch.webhook_url), resolver, allowlist, AbortSignal.any([AbortSignal.timeout(DNS_DEADLINE_MS), stop]));
    } catch {
      return { result: 'failed', statusCode: null };
    }
    const discord = watch.webhook_kind === 'discord';
    const payload = discord ? JSON.stringify(discordBody(JSON.parse(body) as WatchEventBody)) : body;
    const secret = discord ? null : await keys.signingSecret(watch.id);
    // Wall time, not the service's clock: the receiver compares it with its own.
    const headers = deliveryHeaders(id, Date.now(), payload, secret);
    return postWebhook(target, payload, headers, settings.timeoutMs, stop);
  }
}

/** What the log keeps of an attempt's outcome: null when delivered, else `refused` or `failed`, nothing finer. */
function logged(result: AttemptResult): string | null {
  return result === 'delivered' ? null : result;
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return url;
  }
}
