/**
 * /trends and /stats while the database is slow or down (docs/api.md): every read has a
 * deadline (1 s); past it, or on an error, the last good answer for the same question is
 * served with `stale: true`, or StoreUnavailableError (503 with Retry-After) when there is
 * none. After a failure, reads are not tried again for `pauseMs`: an outage costs each
 * request nothing, not one deadline each. Each failure is reported (`onFailure`), so that the
 * 503s that follow have a cause in the log.
 */
import { ObserverError } from '../../core/errors.js';

/** 503 `store_unavailable`: the history database cannot answer and no earlier answer is kept. */
export class StoreUnavailableError extends ObserverError {
  constructor(cause?: unknown) {
    super('store_unavailable', 503, 'The history database is unavailable. Please retry shortly.', {
      cause,
      headers: { 'Retry-After': '5' },
    });
  }
}

export class StoreReadTimeoutError extends Error {
  constructor(ms: number) {
    super(`history read took longer than ${ms} ms`);
    this.name = 'StoreReadTimeoutError';
  }
}

export interface ReadFallbackOptions {
  /** Longest a read may take (default 1000 ms). */
  deadlineMs?: number;
  /** After a failed read, serve the fallback without trying for this long (default 2000 ms). */
  pauseMs?: number;
  /** Distinct questions (trends pages) whose last answer is kept (default 256). */
  maxEntries?: number;
  /**
   * At most one answer kept per this many milliseconds (default 0: every one). Under a flood
   * of distinct questions (the histories of thousands of servers) each kept answer would
   * outlive the young generation only to die in the old one, and the old generation's
   * collections would pause the loop; a sample keeps the often-asked questions all the same.
   */
  keepEveryMs?: number;
  /** Monotonic milliseconds (default performance.now()): the pause is a duration. */
  now?: () => number;
  /** A read that failed or passed its deadline (at most once per `pauseMs`). */
  onFailure?: (error: unknown) => void;
}

export type MaybeStale<T> = T & { stale?: true };

export class ReadFallback {
  private readonly lastGood = new Map<string, object>();
  private pausedUntil = 0;
  private keptAt = -Infinity;
  private readonly deadlineMs: number;
  private readonly keepEveryMs: number;
  private readonly pauseMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  private readonly onFailure: (error: unknown) => void;

  constructor(options: ReadFallbackOptions = {}) {
    this.deadlineMs = options.deadlineMs ?? 1000;
    this.pauseMs = options.pauseMs ?? 2000;
    this.maxEntries = options.maxEntries ?? 256;
    this.keepEveryMs = options.keepEveryMs ?? 0;
    this.now = options.now ?? (() => performance.now());
    this.onFailure = options.onFailure ?? (() => {});
  }

  async read<T extends object>(key: string, compute: () => Promise<T>): Promise<MaybeStale<T>> {
    if (this.now() < this.pausedUntil) return this.fallback<T>(key, null);
    let timer: NodeJS.Timeout | undefined;
    const work = compute();
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StoreReadTimeoutError(this.deadlineMs)), this.deadlineMs);
    });
    try {
      const value = await Promise.race([work, deadline]);
      this.remember(key, value);
      return value;
    } catch (error) {
      // A client error (an unknown cursor), or a migration that keeps the data from being
      // read, is an answer, not an outage.
      if (error instanceof ObserverError && (error.statusCode < 500 || error.code === 'migrating')) throw error;
      work.catch(() => {}); // the late read's failure has no one left to hear it
      this.pausedUntil = this.now() + this.pauseMs;
      this.onFailure(error);
      return this.fallback<T>(key, error);
    } finally {
      clearTimeout(timer);
    }
  }

  private remember(key: string, value: object): void {
    if (this.keepEveryMs > 0) {
      const now = this.now();
      if (now - this.keptAt < this.keepEveryMs) return;
      this.keptAt = now;
    }
    this.lastGood.delete(key);
    if (this.lastGood.size >= this.maxEntries) this.lastGood.delete(this.lastGood.keys().next().value!);
    this.lastGood.set(key, value);
  }

  private fallback<T>(key: string, cause: unknown): MaybeStale<T> {
    const last = this.lastGood.get(key) as T | undefined;
    if (last === undefined) throw new StoreUnavailableError(cause ?? undefined);
    return { ...last, stale: true };
  }
}
