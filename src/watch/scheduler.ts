/**
 * The check loop: every tick it claims the watches due for a check, at most as many as the
 * check budget (WATCH_CHECKS_PER_MINUTE, per instance; across instances too when a shared
 * counter is given) has saved up, and checks them. The store hands them out fairly: verified
 * watches first, clients taking turns (watch-store.ts, claimDue). Once a minute it also expires
 * unverified watches and keeps events and delivery logs within their bounds. Deliveries run in
 * their own loop (delivery.ts): a slow webhook never holds a check back.
 *
 * A failing database fails the tick, not the process: checks wait in the database and resume
 * with it. `stop()` waits for the tick in flight, at most for its deadline.
 */
import type { Clock } from '../core/clock.js';
import type { WindowCounter } from '../core/rate-window.js';
import type { WatchRetention, WatchRow, WatchStore } from '../store/watches/watch-store.js';
import type { WatchChecker } from './checks.js';

export interface WatchSchedulerOptions {
  checker: WatchChecker;
  store: WatchStore;
  clock: Clock;
  /** WATCH_CHECKS_PER_MINUTE: checks a minute, cache hits included; 0 stops the loop. */
  checksPerMinute: number;
  /** Between two checks of a watch. */
  intervalMs: number;
  /**
   * Where the checks of the minute are counted against WATCH_CHECKS_PER_MINUTE for every
   * instance together (the rate limiter's Redis store); without it, this instance's pace alone.
   */
  counter?: WindowCounter;
  /** Bounds of events and logs; `pausedMaxMs`: how long a paused watch is kept. */
  retention: Omit<WatchRetention, 'pausedBefore'> & { pausedMaxMs: number };
  /** Time between two ticks (default 5 s). */
  tickMs?: number;
  onError?: (error: unknown, context: string) => void;
}

const MAINTENANCE_INTERVAL_MS = 60_000;

export class WatchScheduler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** Checks this instance may still start, saved up to a minute's worth. */
  private checkBudget = 0;
  private lastTick = 0;
  private lastMaintenance = 0;

  constructor(private readonly options: WatchSchedulerOptions) {}

  start(): void {
    if (this.timer !== undefined || this.options.checksPerMinute <= 0) return;
    this.lastTick = this.options.clock.now();
    this.checkBudget = 1;
    // A tick that is still running when the next is due lets that one pass.
    this.timer = setInterval(() => {
      this.running ??= this.tick()
        .catch((error: unknown) => this.options.onError?.(error, 'watches'))
        .finally(() => (this.running = undefined));
    }, this.options.tickMs ?? 5_000);
    this.timer.unref();
  }

  /** Starts no more ticks; waits for the one in flight, at most `deadlineMs`. */
  async stop(deadlineMs = 3_000): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    if (this.running === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.running, new Promise((resolve) => (timer = setTimeout(resolve, deadlineMs)))]);
    clearTimeout(timer);
  }

  /** One round: maintenance when due, then the due checks within the budget. */
  async tick(): Promise<void> {
    const { checker, store, clock, checksPerMinute, intervalMs } = this.options;
    const now = clock.now();
    if (now - this.lastMaintenance >= MAINTENANCE_INTERVAL_MS) {
      await this.maintain(now);
      this.lastMaintenance = now;
    }
    this.checkBudget = Math.min(checksPerMinute, this.checkBudget + ((now - this.lastTick) * checksPerMinute) / 60_000);
    this.lastTick = now;
    const allowed = Math.floor(this.checkBudget);
    if (allowed <= 0) return;
    const claimed = await store.claimDue(now, allowed, now + intervalMs);
    this.checkBudget -= claimed.length;
    const within = await this.withinSharedBudget(claimed);
    await Promise.all(within.map((watch) => checker.check(watch).catch((error: unknown) => this.options.onError?.(error, 'watch check'))));
  }

  private async maintain(now: number): Promise<void> {
    const { store, retention } = this.options;
    await store.expireUnverified(now);
    await store.prune(now, { ...retention, pausedBefore: now - retention.pausedMaxMs });
  }

  /**
   * The claimed watches the minute's shared budget still has room for; the others (the end of
   * the fair order) are checked when the minute is over. A failing counter lets them all through.
   */
  private async withinSharedBudget(claimed: WatchRow[]): Promise<WatchRow[]> {
    const { counter, checksPerMinute, store, clock } = this.options;
    if (!counter || claimed.length === 0) return claimed;
    let counted;
    try {
      counted = await counter.hit('watch-checks', 60_000, checksPerMinute, claimed.length);
    } catch (error) {
      this.options.onError?.(error, 'watch budget');
      return claimed;
    }
    const over = Math.min(claimed.length, Math.max(0, counted.count - checksPerMinute));
    const later = claimed.slice(claimed.length - over);
    for (const watch of later) await store.reschedule(watch.id, clock.now() + counted.resetMs, watch.rechecks);
    return claimed.slice(0, claimed.length - over);
  }
}
