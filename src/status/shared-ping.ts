/**
 * Coalescing across instances that share a cache (Redis): the instance that claims a target
 * (an owner token, released by check-and-delete) gets the entry with its claim, since another
 * instance may have pinged and released in between, and pings only if it is still stale;
 * writing the result releases the claim. The others wait for the owner's result to land in the
 * cache, polling with backoff, and fall back to their own ping if it does not land in time.
 */
import type { Clock } from '../core/clock.js';
import type { CacheEntry, StatusCache } from './cache.js';

/** The claim a ping holds: its token, the entry read with it, and whether the write released it. */
export interface HeldClaim {
  token: string;
  previous: CacheEntry | undefined;
  released: boolean;
}

/** Waiting for another instance's ping: first poll of the shared cache, backoff cap, count. */
const JOIN_POLL_FIRST_MS = 20;
const JOIN_POLL_MAX_MS = 250;
const JOIN_POLL_MAX_ATTEMPTS = 200;

export interface SharedPingOptions {
  cache: StatusCache;
  clock: Clock;
  key: string;
  /** How long a claim holds, and how long a waiting instance polls for the owner's result. */
  budgetMs: number;
  isFresh: (entry: CacheEntry) => boolean;
  /** Pings and writes the entry; with a claim, the write releases it. */
  ping: (claim?: HeldClaim) => Promise<CacheEntry>;
}

/** The entry for `key`: from this instance's ping (under a claim when the cache offers one) or another's. */
export async function pingOrJoin({ cache, clock, key, budgetMs, isFresh, ping }: SharedPingOptions): Promise<CacheEntry> {
  if (!cache.claim) return ping();
  const { token, entry: seen } = await cache.claim(key, budgetMs);
  if (token !== null) {
    const claim: HeldClaim = { token, previous: seen, released: false };
    try {
      if (seen && isFresh(seen)) return seen;
      return await ping(claim);
    } finally {
      if (!claim.released) await cache.release?.(key, token);
    }
  }
  if (seen && isFresh(seen)) return seen;
  const before = seen?.latest.checkedAt ?? -1;
  const deadline = clock.now() + budgetMs;
  let delay = JOIN_POLL_FIRST_MS;
  for (let attempt = 0; attempt < JOIN_POLL_MAX_ATTEMPTS && clock.now() < deadline; attempt += 1) {
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, JOIN_POLL_MAX_MS);
    const entry = await cache.get(key, { skipL1: true });
    // Only the owner's result: newer than what this instance saw, and fresh. An older one (a
    // local copy read while Redis is away) is not an answer.
    if (entry && entry.latest.checkedAt > before && isFresh(entry)) return entry;
  }
  return ping();
}
