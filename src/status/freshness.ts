/**
 * How long a cached status answers, and what the cache keeps after a ping (docs/api.md,
 * "Caching and stale", "Flap damping"):
 *  - a fresh result (failures too) answers for the TTL;
 *  - after that, a success answers stale for STALE_WHILE_REVALIDATE_MS more while it is refreshed;
 *  - with every ping slot taken, or the target IP's budget spent, a success under
 *    SATURATION_STALE_MS old stands in for a fresh ping;
 *  - a failure behind a recent success answers with that success while damping holds.
 */
import type { CacheEntry, StoredStatus } from './cache.js';
import { addFailure, dampingHolds, type DampingSettings, type FailureStreak } from './damping.js';

/** How long after expiry a success may still be served stale while it is refreshed. */
export const STALE_WHILE_REVALIDATE_MS = 5 * 60_000;
/** How old a success may be to stand in for a fresh ping when the service is saturated. */
export const SATURATION_STALE_MS = 24 * 60 * 60_000;

export interface FreshnessRules {
  ttlMs: number;
  /** Without it every failure is answered as it is. */
  damping?: DampingSettings | undefined;
}

/** What a cached entry answers at `now` without a ping: its latest result, its last success stale, or nothing. */
export type CacheVerdict =
  | { kind: 'fresh'; freshMs: number }
  | { kind: 'stale-while-revalidate'; last: StoredStatus }
  | { kind: 'expired' };

export function judgeEntry(entry: CacheEntry | undefined, rules: FreshnessRules, now: number): CacheVerdict {
  if (entry && isFresh(entry, rules, now)) return { kind: 'fresh', freshMs: entry.latest.checkedAt + rules.ttlMs - now };
  const last = entry?.lastSuccess;
  if (last && entry.latest.status.online && now < last.checkedAt + rules.ttlMs + STALE_WHILE_REVALIDATE_MS) {
    return { kind: 'stale-while-revalidate', last };
  }
  return { kind: 'expired' };
}

export function isFresh(entry: CacheEntry, rules: FreshnessRules, now: number): boolean {
  return now < entry.latest.checkedAt + rules.ttlMs;
}

/** The last success, when it is recent enough to stand in for a ping the service cannot run now. */
export function saturationStandIn(last: StoredStatus | null | undefined, now: number): StoredStatus | null {
  return last && now < last.checkedAt + SATURATION_STALE_MS ? last : null;
}

/** Whether the entry is a failure behind a recent success that damping still answers from that success. */
export function isDamped(entry: CacheEntry, rules: FreshnessRules, now: number): entry is CacheEntry & { lastSuccess: StoredStatus; streak: FailureStreak } {
  const { latest, lastSuccess, streak } = entry;
  return !latest.status.online && !!lastSuccess && !!streak && !!rules.damping && dampingHolds(streak, rules.damping, now);
}

/** The cache entry after a ping, and how long the cache keeps it (long enough for its last success to stand in). */
export function entryAfterPing(previous: CacheEntry | undefined, stored: StoredStatus, rules: FreshnessRules, now: number): { entry: CacheEntry; keepMs: number } {
  const entry: CacheEntry = {
    latest: stored,
    lastSuccess: stored.status.online ? stored : (previous?.lastSuccess ?? null),
    streak: stored.status.online ? null : nextStreak(previous, stored.checkedAt, rules),
  };
  const keepMs = entry.lastSuccess ? Math.max(rules.ttlMs, entry.lastSuccess.checkedAt + SATURATION_STALE_MS - now) : rules.ttlMs;
  return { entry, keepMs };
}

/**
 * The failure streak after a failure checked at `now`: it goes on from the previous failure's,
 * and starts only right after a success recent enough to be served stale (within the TTL and
 * the stale-while-revalidate window): an old success is no evidence the server is up.
 */
function nextStreak(previous: CacheEntry | undefined, now: number, rules: FreshnessRules): FailureStreak | null {
  if (!rules.damping || !previous?.lastSuccess) return null;
  if (previous.streak) return addFailure(previous.streak, now);
  if (!previous.latest.status.online) return null;
  if (now > previous.lastSuccess.checkedAt + rules.ttlMs + STALE_WHILE_REVALIDATE_MS) return null;
  return addFailure(null, now);
}
