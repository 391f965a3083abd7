/**
 * Admission control for expensive work: renders (images, the MOTD banner, the widget) and pings.
 * docs/hostile-clients.md describes what a client sees.
 *
 * - Renders run in a few slots with a short queue behind them. A client holds at most half the
 *   slots and a quarter of the queue, so one client flooding new texts cannot keep others out.
 * - Renders draw on the main thread (the encoding runs in libuv's pool): while the drawing took
 *   more than `renderLoopShare` of the last sampling period, new renders wait in the queue, so
 *   renders can never crowd out the cheap answers.
 * - While the event loop lags (its mean delay above `maxEventLoopDelayMs` in two sampling
 *   periods in a row: a sustained lag, not one long pause), new renders and new pings are
 *   refused before they cost anything. The first second is not judged: start-up work is not load.
 * - Refused work is a 503 `overloaded` with `Retry-After`. A refused render's answer is held back
 *   `refusalDelayMs` first: a client asking again at once cannot turn its refusals into the
 *   load that slows everyone else (its connections are capped, so this holds little).
 * - Health and cached answers never come here: only a render of an image not in the render
 *   cache, and a ping, are admitted.
 *
 * Our own rather than @fastify/under-pressure: that plugin answers 503 on every route of the
 * instance while under pressure (health and cached statuses included) and has no notion of a
 * client's share; here only the expensive step is gated, per client.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { ObserverError } from '../core/errors.js';

export interface AdmissionOptions {
  /** Renders running at once (RENDER_CONCURRENCY). */
  renderSlots: number;
  /** Renders waiting for a slot (RENDER_QUEUE); 0: no queue. */
  renderQueue: number;
  /** Share of the event loop's time renders may take, in percent (RENDER_LOOP_SHARE). */
  renderLoopShare: number;
  /** Mean event-loop delay over a sampling period above which new work is refused (SHED_EVENT_LOOP_DELAY_MS). */
  maxEventLoopDelayMs: number;
  /** Longest wait of a queued render before it is refused (default 2000 ms). */
  queueTimeoutMs?: number;
  /** How often the event-loop delay is sampled (default 250 ms). */
  sampleMs?: number;
  /** How long a refused render's 503 is held back (default 1000 ms). */
  refusalDelayMs?: number;
}

/** The 503 of refused work. */
export class OverloadedError extends ObserverError {
  constructor(what: string) {
    super('overloaded', 503, `The service is overloaded (${what}). Please retry in a few seconds.`, {
      headers: { 'Retry-After': '2' },
    });
  }
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
  /** Main-thread time renders took in the current sampling period, and whether the last one was over budget. */
  private renderMs = 0;
  private rendersOverBudget = false;
  private sampledAt = performance.now();
  /** Start-up work is not load: the first second is not judged. */
  private readonly judgedFrom = this.sampledAt + 1000;

  constructor(private readonly options: AdmissionOptions) {
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
    if (this.lagging) throw new OverloadedError('too many queries at once');
  }

  /** Runs `work` in a render slot for `client`, after a short wait at most, or refuses it. */
  async render<T>(client: string, work: () => Promise<T>): Promise<T> {
    await this.acquire(client);
    try {
      // The synchronous part of a render (the drawing) is what it takes from the event loop.
      const started = performance.now();
      const pending = work();
      this.renderMs += performance.now() - started;
      return await pending;
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
    this.rendersOverBudget = this.renderMs > ((now - this.sampledAt) * this.options.renderLoopShare) / 100;
    this.renderMs = 0;
    this.sampledAt = now;
    this.drain();
  }

  close(): void {
    clearInterval(this.sampler);
    this.histogram.disable();
    for (const waiting of this.queue.splice(0)) clearTimeout(waiting.timer);
  }

  /** Whether `client` may start a render now. */
  private mayStart(client: string): boolean {
    const running = this.held.get(client)?.running ?? 0;
    return !this.rendersOverBudget && this.running < this.options.renderSlots && running < this.perClientSlots;
  }

  private start(client: string): void {
    const mine = this.held.get(client) ?? { running: 0, queued: 0 };
    mine.running += 1;
    this.held.set(client, mine);
    this.running += 1;
  }

  private acquire(client: string): Promise<void> {
    if (this.lagging) return this.refuse('the event loop is saturated');
    if (this.mayStart(client)) {
      this.start(client);
      return Promise.resolve();
    }
    const mine = this.held.get(client) ?? { running: 0, queued: 0 };
    if (this.queue.length >= this.options.renderQueue || mine.queued >= this.perClientQueue) {
      return this.refuse('too many images being drawn');
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
          reject(new OverloadedError('too many images being drawn'));
        }, this.queueTimeoutMs),
      };
      this.queue.push(waiting);
    });
  }

  private refuse(why: string): Promise<never> {
    const error = new OverloadedError(why);
    return new Promise((_resolve, reject) => setTimeout(() => reject(error), this.options.refusalDelayMs ?? 1000));
  }

  private release(client: string): void {
    this.running -= 1;
    this.forget(client, 'running');
    this.drain();
  }

  /** Starts waiting renders, first come first, while slots and the render budget allow. */
  private drain(): void {
    for (let i = 0; i < this.queue.length; ) {
      const waiting = this.queue[i]!;
      if (!this.mayStart(waiting.client)) {
        if (this.rendersOverBudget || this.running >= this.options.renderSlots) return;
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
