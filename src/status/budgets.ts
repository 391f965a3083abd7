/**
 * The status service's budgets, counted in the window counter it is handed (the rate limiter's
 * memory store, or its Redis store when instances share one), docs/hostile-clients.md:
 *  - TargetBudget: pings per destination IP a minute (TARGET_PINGS_PER_MINUTE), across all
 *    names and clients, so that many names pointing at one address cannot make Observer hammer
 *    it. The key is the target IP.
 *  - NewServerAllowance: servers the store did not know that one client may have recorded a day
 *    (NEW_SERVERS_PER_CLIENT_PER_DAY), which bounds the rows a client can make. The key is the
 *    client's keyed daily hash, never its address.
 * A counter failure lets the ping (or the recording) through, as the rate limits do.
 */
import { TargetRateLimitedError } from '../core/errors.js';
import { rateLimitFields, secondsLeft, type WindowCount, type WindowCounter } from '../core/rate-window.js';

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;

/** A limit counted per key in fixed windows; a counter failure is reported and lets the hit through. */
abstract class CountedLimit {
  constructor(
    private readonly counter: WindowCounter,
    protected readonly limit: number,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  /** One hit on `key`; null when the counter failed. */
  protected async count(key: string, windowMs: number): Promise<WindowCount | null> {
    try {
      return await this.counter.hit(key, windowMs, this.limit);
    } catch (error) {
      this.onError(error);
      return null;
    }
  }
}

export class TargetBudget extends CountedLimit {
  /** Draws one ping to `ip`; rejects with TargetRateLimitedError (429) when its minute is spent. */
  async take(ip: string): Promise<void> {
    const counted = await this.count(`target:${ip}`, MINUTE_MS);
    if (counted === null || counted.count <= this.limit) return;
    const retryAfter = secondsLeft(counted.resetMs);
    const headers = { ...rateLimitFields('target', this.limit, MINUTE_MS, counted), 'Retry-After': String(retryAfter) };
    throw new TargetRateLimitedError(this.limit, headers, retryAfter);
  }

  /** Draws one ping to `ip` as `take` does; false, rather than the 429, when its minute is spent. */
  async allows(ip: string): Promise<boolean> {
    try {
      await this.take(ip);
      return true;
    } catch (error) {
      if (error instanceof TargetRateLimitedError) return false;
      throw error;
    }
  }
}

export class NewServerAllowance extends CountedLimit {
  /** Draws one new server from the client's day; false when its day's allowance is spent. */
  async allows(clientKey: string): Promise<boolean> {
    const counted = await this.count(`new-servers:${clientKey}`, DAY_MS);
    return counted === null || counted.count <= this.limit;
  }
}
