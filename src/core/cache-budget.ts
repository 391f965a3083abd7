/**
 * One memory budget, CACHE_MEMORY_MB, shared by the in-process caches. Each cache is bounded
 * by bytes (lru-cache's `maxSize` with an estimate of every entry's size), not by a count of
 * entries, so the budget holds whatever the entries weigh: a status with a large favicon
 * counts for more than one without. The shares and what each cache counts are in
 * docs/performance.md#memory.
 */

export interface CacheBudget {
  /** Status answers (and with Redis, the local copy that serves while Redis is away). */
  statuses: number;
  /** Rendered images (icons, banners). */
  renders: number;
  /** Rate-limit windows of clients. */
  clientWindows: number;
  /** Pings per target IP and new servers per client. */
  budgets: number;
  /** Names without DNS records. */
  missingNames: number;
  /** Servers the background refresher tracks. */
  refresher: number;
}

/** Fractions of the budget; they add up to 1. */
const SHARES: Readonly<CacheBudget> = {
  statuses: 0.4,
  renders: 0.25,
  clientWindows: 0.15,
  budgets: 0.1,
  missingNames: 0.05,
  refresher: 0.05,
};

/** CACHE_MEMORY_MB's default. */
export const DEFAULT_CACHE_MEMORY_MB = 32;

/** Bytes each cache may hold out of `megabytes` (MiB). */
export function cacheBudget(megabytes: number): CacheBudget {
  const bytes = megabytes * 1024 * 1024;
  const share = (name: keyof CacheBudget) => Math.floor(bytes * SHARES[name]);
  return {
    statuses: share('statuses'),
    renders: share('renders'),
    clientWindows: share('clientWindows'),
    budgets: share('budgets'),
    missingNames: share('missingNames'),
    refresher: share('refresher'),
  };
}
