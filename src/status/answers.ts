/**
 * What a look-up answers, built from what the cache holds: the status (as stored, its
 * `stale: true` copy, or its damped copy), `X-Cache` and `max-age`. Each answer is reported
 * to the metrics observer once.
 */
import { ObserverError, type TargetRateLimitedError } from '../core/errors.js';
import type { Clock } from '../core/clock.js';
import type { ServerStatus } from '../core/types.js';
import type { CacheEntry, StoredStatus } from './cache.js';
import type { FailureStreak } from './damping.js';
import { isDamped, judgeEntry, saturationStandIn, type FreshnessRules } from './freshness.js';
import type { StatusAnswer } from './types.js';

export interface AnswerDeps {
  clock: Clock;
  rules: FreshnessRules;
  /** Called with how each look-up was answered. */
  observe?: ((cache: StatusAnswer['cache']) => void) | undefined;
}

/** What the cache answers without a ping of the look-up's own; `refresh`: start one in the background. */
export interface CachedAnswer {
  answer: StatusAnswer;
  refresh: boolean;
}

export class AnswerBuilder {
  /** The `stale: true` copy of a stored status, made once per stored status. */
  private readonly staleCopies = new WeakMap<StoredStatus, ServerStatus>();
  /** The damped answer of a failure (its last success, stale, with `failing`), made once per failure. */
  private readonly dampedCopies = new WeakMap<StoredStatus, ServerStatus>();

  constructor(private readonly deps: AnswerDeps) {}

  /**
   * What a look-up can answer without waiting for a ping of its own: fresh (HIT), stale while
   * one background refresh runs (none when `saturated`: every ping slot is taken), or, when
   * saturated, the last success under 24 hours (or 503). Undefined: the look-up pings (or joins
   * the ping in flight).
   */
  fromCache(entry: CacheEntry | undefined, saturated: boolean): CachedAnswer | undefined {
    const { rules, clock } = this.deps;
    const verdict = judgeEntry(entry, rules, clock.now());
    if (entry && verdict.kind === 'fresh') {
      return { answer: this.damped(entry) ?? this.answer(entry.latest, 'HIT', verdict.freshMs), refresh: false };
    }
    if (verdict.kind === 'stale-while-revalidate') return { answer: this.answer(verdict.last, 'STALE', 0, true), refresh: !saturated };
    if (saturated) return { answer: this.busy(entry?.lastSuccess ?? null), refresh: false };
    return undefined;
  }

  /** The answer of the ping this look-up started or joined. */
  afterPing(entry: CacheEntry): StatusAnswer {
    const { latest } = entry;
    return this.damped(entry) ?? this.answer(latest, 'MISS', Math.max(0, latest.checkedAt + this.deps.rules.ttlMs - this.deps.clock.now()));
  }

  /** No ping slot for this look-up: the last success under 24 hours, stale, or 503. */
  busy(last: StoredStatus | null): StatusAnswer {
    const standIn = saturationStandIn(last, this.deps.clock.now());
    if (standIn) return this.answer(standIn, 'STALE', 0, true);
    throw new ObserverError('service_busy', 503, 'The service is busy with other queries. Please retry shortly.', {
      headers: { 'Retry-After': '5' },
    });
  }

  /** The target IP's pings of the minute are spent: the last success under 24 hours, stale, or the 429. */
  overTargetBudget(entry: CacheEntry | undefined, error: TargetRateLimitedError): StatusAnswer {
    const standIn = saturationStandIn(entry?.lastSuccess, this.deps.clock.now());
    if (standIn) return this.answer(standIn, 'STALE', 0, true);
    throw error;
  }

  /**
   * A failure behind a recent success while damping holds (docs/api.md, "Flap damping"): the
   * last success, stale, with `failing` saying since when and why the server does not answer.
   */
  private damped(entry: CacheEntry): StatusAnswer | undefined {
    if (!isDamped(entry, this.deps.rules, this.deps.clock.now())) return undefined;
    const { latest, lastSuccess, streak } = entry;
    let status = this.dampedCopies.get(latest);
    if (status === undefined) {
      status = dampedStatus(lastSuccess.status, latest.status, streak);
      this.dampedCopies.set(latest, status);
    }
    this.deps.observe?.('STALE');
    return { status, cache: 'STALE', maxAgeSeconds: 0 };
  }

  private answer(stored: StoredStatus, cache: StatusAnswer['cache'], freshMs: number, stale = false): StatusAnswer {
    let status = stored.status;
    if (stale) {
      status = this.staleCopies.get(stored) ?? { ...stored.status, stale: true };
      this.staleCopies.set(stored, status);
    }
    this.deps.observe?.(cache);
    return { status, cache, maxAgeSeconds: Math.max(0, Math.floor(freshMs / 1000)) };
  }
}

/** The damped answer: the last success, stale, and `failing` (since when, how often, why). */
function dampedStatus(success: ServerStatus, failure: ServerStatus, streak: FailureStreak): ServerStatus {
  return {
    ...success,
    stale: true,
    failing: {
      since: new Date(streak.since).toISOString(),
      failures: streak.failures,
      error: failure.error,
      error_code: failure.error_code,
    },
  };
}
