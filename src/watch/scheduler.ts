/**
 * The watch loop: every tick it claims the watches due for a check, at most as many as the
 * budget (WATCH_PINGS_PER_MINUTE, per instance) has saved up, checks them, delivers the events
 * that are due and, once a minute, deletes unverified watches past their window. A failing
 * database fails the tick, not the process: checks and deliveries wait in the database and
 * resume with it, so nothing is lost. `stop()` waits for the tick in flight.
 */
import type { Clock } from '../core/clock.js';
import type { WindowCounter } from '../core/rate-window.js';
import type { WatchRow, WatchStore } from '../store/watch-store.js';
import type { WatchService } from './service.js';

export interface WatchSchedulerOptions {
  service: WatchService;
  store: WatchStore;
  clock: Clock;
  pingsPerMinute: number;
  /**
   * Where the checks of the minute are counted against WATCH_PINGS_PER_MINUTE for every
   * instance together (the rate limiter's Redis store); without it, this instance's pace alone.
   */
  counter?: WindowCounter;
  /** Time between two ticks (default 5 s). */
  tickMs?: number;
  onError?: (error: unknown, context: string) => void;
}

const EXPIRY_INTERVAL_MS = 60_000;

export class WatchScheduler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private tokens = 0;
  private lastTick = 0;
  private lastExpiry = 0;

  constructor(private readonly options: WatchSchedulerOptions) {}

  start(): void {
    if (this.timer !== undefined || this.options.pingsPerMinute <= 0) return;
    this.lastTick = this.options.clock.now();
    this.tokens = 1;
    // A tick that is still running when the next is due lets that one pass.
    this.timer = setInterval(() => {
      this.running ??= this.tick()
        .catch((error: unknown) => this.options.onError?.(error, 'watches'))
        .finally(() => (this.running = undefined));
    }, this.options.tickMs ?? 5_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One round: expiry, due checks within the budget, due deliveries. */
  async tick(): Promise<void> {
    const { service, store, clock, pingsPerMinute } = this.options;
    const now = clock.now();
    if (now - this.lastExpiry >= EXPIRY_INTERVAL_MS) {
      await service.expire();
      this.lastExpiry = now;
    }
    // A minute's worth of checks at most is saved up.
    this.tokens = Math.min(pingsPerMinute, this.tokens + ((now - this.lastTick) * pingsPerMinute) / 60_000);
    this.lastTick = now;
    const allowed = Math.floor(this.tokens);
    if (allowed > 0) {
      const claimed = await store.claimDue(now, allowed, () => now + service.intervalMs);
      this.tokens -= claimed.length;
      const within = await this.withinBudget(claimed);
      await Promise.all(within.map((watch) => service.check(watch).catch((error: unknown) => this.options.onError?.(error, 'watch check'))));
    }
    await service.deliverDue();
  }

  /**
   * The claimed watches the minute's shared budget still has room for; the others are checked
   * again when the minute is over. A failing counter lets them all through.
   */
  private async withinBudget(claimed: WatchRow[]): Promise<WatchRow[]> {
    const { counter, pingsPerMinute, store, clock } = this.options;
    if (!counter || claimed.length === 0) return claimed;
    let counted;
    try {
      counted = await counter.hit('watch-pings', 60_000, pingsPerMinute, claimed.length);
    } catch (error) {
      this.options.onError?.(error, 'watch budget');
      return claimed;
    }
    const over = Math.min(claimed.length, Math.max(0, counted.count - pingsPerMinute));
    const later = claimed.slice(claimed.length - over);
    for (const watch of later) await store.setNextCheck(watch.id, clock.now() + counted.resetMs);
    return claimed.slice(0, claimed.length - over);
  }
}
