/**
 * Admission control for expensive work: renders (images, the MOTD banner, the widget) and pings.
 * docs/hostile-clients.md describes what a client sees.
 *
 * - Renders run in a few slots with a short queue behind them. A client holds at most half the
 *   slots and a quarter of the queue, so one client flooding new texts cannot keep others out.
 *   A render in a slot draws in the render pool's worker threads (src/render/pool.ts), at the
 *   lowest scheduling priority: it takes no time of the event loop's thread.
 * - While the event loop lags (its mean delay above `maxEventLoopDelayMs` in two sampling
 *   periods in a row: a sustained lag, not one long pause), new renders and new pings are
 *   refused before they cost anything. The first second is not judged: start-up work is not load.
 * - Refused work is a 503 `overloaded` with `Retry-After`. A refused render's answer is held back
 *   `refusalDelayMs` first: a client asking again at once cannot turn its refusals into the
 *   load that slows everyone else (its connections are capped, so this holds little).
 * - Every refusal is reported (`Shedding.refused`: the metrics count it), and the first of an
 *   episode once (`Shedding.began`: one log line); an episode ends after `EPISODE_GAP_MS`
 *   without a refusal.
 * - Health and cached answers never come here: only a render of an image not in the render
 *   cache, and a ping, are admitted.
 *
 * Our own rather than @fastify/under-pressure: that plugin answers 503 on every route of the
 * instance while under pressure (health and cached statuses included) and has no notion of a
 * client's share; here only the expensive step is gated, per client.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { OverloadedError } from '../core/errors.js';

export { OverloadedError };

/** What was refused, and why: the event loop lagged, or the render slots and queue were full. */
export type SheddingReason = 'event_loop_lag' | 'render_slots';
export interface Refusal {
  work: 'render' | 'ping';
  reason: SheddingReason;
}

/** Where refusals are reported: each one (a metric), and the first of each episode (a log line). */
export interface Shedding {
  refused?(refusal: Refusal): void;
  began?(first: Refusal): void;
}

/** An episode of shedding ends after this long without a refusal. */
export const EPISODE_GAP_MS = 10_000;

export interface AdmissionOptions {
  /** Renders running at once (RENDER_CONCURRENCY). */
  renderSlots: number;
  /** Renders waiting for a slot (RENDER_QUEUE); 0: no queue. */
  renderQueue: number;
  /** Mean event-loop delay over a sampling period above which new work is refused (SHED_EVENT_LOOP_DELAY_MS). */
  maxEventLoopDelayMs: number;
  /** Longest wait of a queued render before it is refused (default 2000 ms). */
  queueTimeoutMs?: number;
  /** How often the event-loop delay is sampled (default 250 ms). */
  sampleMs?: number;
  /** How long a refused render's 503 is held back (default 1000 ms). */
  refusalDelayMs?: number;
}

interface Waiting {
  client: string;
  start: () => void;
  timer: NodeJS.Timeout;
}

export class Admission {
  private running = 0;
  private readonly queue: Waiting[] = [];
  /** Slots and queue places held per client (entries removed at zero). */
  private readonly held = new Map<string, { running: number; queued: number }>();
  private readonly perClientSlots: number;
  private readonly perClientQueue: number;
  private readonly queueTimeoutMs: number;
  private readonly histogram: IntervalHistogram;
  private readonly sampler: NodeJS.Timeout;
  private lagging = false;
  /** Whether the last sampling period lagged; two in a row make `lagging`. */
  private lagged = false;
  /** When the last refusal was, for telling episodes apart (-Infinity: none yet). */
  private lastRefusalAt = -Infinity;
  /** Start-up work is not load: the first second is not judged. */
  private readonly judgedFrom = performance.now() + 1000;

  constructor(
    private readonly options: AdmissionOptions,
    private readonly shedding: Shedding = {},
  ) {
    this.perClientSlots = Math.max(1, Math.floor(options.renderSlots / 2));
    this.perClientQueue = Math.max(1, Math.floor(options.renderQueue / 4));
    this.queueTimeoutMs = options.queueTimeoutMs ?? 2000;
    this.histogram = monitorEventLoopDelay({ resolution: 10 });
    this.histogram.enable();
    this.sampler = setInterval(() => this.sample(), options.sampleMs ?? 250);
    this.sampler.unref();
  }

  /** Before a ping: refuses it while the event loop lags. */
  admitPing(): void {
    if (!this.lagging) return;
    this.report({ work: 'ping', reason: 'event_loop_lag' });
    throw new OverloadedError('too many queries at once');
  }

  /** Runs `work` in a render slot for `client`, after a short wait at most, or refuses it. */
  async render<T>(client: string, work: () => Promise<T>): Promise<T> {
    await this.acquire(client);
    try {
      return await work();
    } finally {
      this.release(client);
    }
  }

  private sample(): void {
    const now = performance.now();
    const lags = this.histogram.mean / 1e6 > this.options.maxEventLoopDelayMs && now >= this.judgedFrom;
    this.lagging = lags && this.lagged;
    this.lagged = lags;
    this.histogram.reset();
  }

  close(): void {
    clearInterval(this.sampler);
    this.histogram.disable();
    for (const waiting of this.queue.splice(0)) clearTimeout(waiting.timer);
  }

  /** Whether `client` may start a render now. */
  private mayStart(client: string): boolean {
    const running = this.held.get(client)?.running ?? 0;
    return this.running < this.options.renderSlots && running < this.perClientSlots;
  }

  private start(client: string): void {
    const mine = this.held.get(client) ?? { running: 0, queued: 0 };
    mine.running += 1;
    this.held.set(client, mine);
    this.running += 1;
  }

  private acquire(client: string): Promise<void> {
    if (this.lagging) return this.refuse('the event loop is saturated', 'event_loop_lag');
    if (this.mayStart(client)) {
      this.start(client);
      return Promise.resolve();
    }
    const mine = this.held.get(client) ?? { running: 0, queued: 0 };
    if (this.queue.length >= this.options.renderQueue || mine.queued >= this.perClientQueue) {
      return this.refuse('too many images being drawn', 'render_slots');
    }
    mine.queued += 1;
    this.held.set(client, mine);
    return new Promise((resolve, reject) => {
      const waiting: Waiting = {
        client,
        start: () => {
          clearTimeout(waiting.timer);
          resolve();
        },
        timer: setTimeout(() => {
          this.queue.splice(this.queue.indexOf(waiting), 1);
          this.forget(client, 'queued');
          this.report({ work: 'render', reason: 'render_slots' });
          reject(new OverloadedError('too many images being drawn'));
        }, this.queueTimeoutMs),
      };
      this.queue.push(waiting);
    });
  }

  private refuse(why: string, reason: SheddingReason): Promise<never> {
    this.report({ work: 'render', reason });
    const error = new OverloadedError(why);
    return new Promise((_resolve, reject) => setTimeout(() => reject(error), this.options.refusalDelayMs ?? 1000));
  }

  private release(client: string): void {
    this.running -= 1;
    this.forget(client, 'running');
    this.drain();
  }

  /** One refusal: reported, and the first of an episode said once. */
  private report(refusal: Refusal): void {
    const now = performance.now();
    if (now - this.lastRefusalAt > EPISODE_GAP_MS) this.shedding.began?.(refusal);
    this.lastRefusalAt = now;
    this.shedding.refused?.(refusal);
  }

  /** Starts waiting renders, first come first, while slots allow. */
  private drain(): void {
    for (let i = 0; i < this.queue.length; ) {
      const waiting = this.queue[i]!;
      if (!this.mayStart(waiting.client)) {
        if (this.running >= this.options.renderSlots) return;
        i += 1;
        continue;
      }
      this.queue.splice(i, 1);
      this.held.get(waiting.client)!.queued -= 1;
      this.start(waiting.client);
      waiting.start();
    }
  }

  private forget(client: string, what: 'running' | 'queued'): void {
    const mine = this.held.get(client);
    if (!mine) return;
    mine[what] -= 1;
    if (mine.running === 0 && mine.queued === 0) this.held.delete(client);
  }
}
