/**
 * Pings per destination IP (TARGET_PINGS_PER_MINUTE, docs/hostile-clients.md): every address a
 * look-up is about to connect to draws one unit from that IP's budget of the minute, across
 * all names and clients, so that many names pointing at one address cannot make Observer
 * hammer it. Counted in the window counter it is handed: the rate limiter's memory store, or
 * its Redis store when instances share one (the key is the target IP, never a client's).
 */
import { TargetRateLimitedError } from '../core/errors.js';
import { rateLimitFields, secondsLeft, type WindowCount, type WindowCounter } from '../core/rate-window.js';

const WINDOW_MS = 60_000;

export class TargetBudget {
  constructor(
    private readonly counter: WindowCounter,
    private readonly pingsPerMinute: number,
    /** A counter failure lets the ping through (as the rate limits do); this hears about it. */
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  /** Draws one ping to `ip`; rejects with TargetRateLimitedError (429) when its minute is spent. */
  async take(ip: string): Promise<void> {
    let counted: WindowCount;
    try {
      counted = await this.counter.hit(`target:${ip}`, WINDOW_MS, this.pingsPerMinute);
    } catch (error) {
      this.onError(error);
      return;
    }
    if (counted.count <= this.pingsPerMinute) return;
    const retryAfter = secondsLeft(counted.resetMs);
    const headers = { ...rateLimitFields('target', this.pingsPerMinute, WINDOW_MS, counted), 'Retry-After': String(retryAfter) };
    throw new TargetRateLimitedError(this.pingsPerMinute, headers, retryAfter);
  }
}
