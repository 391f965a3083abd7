/**
 * Retention: how long raw checks, hourly rows and servers are kept, and the contract of the
 * per-database work that enforces it (sqlite/maintenance.ts, postgres/partitions.ts). That
 * work runs in the background, never before the instance listens, and in steps short enough
 * that reads and group commits go on between them.
 */
import { HOUR_MS } from './history/check-row.js';

const DAY_MS = 24 * HOUR_MS;
/** The 24-hour history reads raw checks from its first 10-minute bucket on: 24 h and 10 min back. */
const RAW_CHECKS_KEPT_AT_LEAST_MS = 25 * HOUR_MS;

export interface Retention {
  /** CHECK_RETENTION_DAYS: raw checks. */
  checkDays: number;
  /** ROLLUP_RETENTION_DAYS: hourly rows (the 7- and 30-day history, uptime). */
  rollupDays: number;
}

export interface RetentionCutoffs {
  /** Raw checks older than this (ms since the epoch) go. */
  checksBefore: number;
  /** Hourly rows of hours before this one (hours since the epoch) go. */
  hoursBefore: number;
  /** Servers not checked since this time go (every row of theirs is older than both cutoffs). */
  serversBefore: number;
}

export function retentionCutoffs(retention: Retention, now: number): RetentionCutoffs {
  const checksMs = Math.max(retention.checkDays * DAY_MS, RAW_CHECKS_KEPT_AT_LEAST_MS);
  const hoursMs = retention.rollupDays * DAY_MS;
  return {
    checksBefore: now - checksMs,
    hoursBefore: Math.floor((now - hoursMs) / HOUR_MS),
    serversBefore: now - Math.max(checksMs, hoursMs + HOUR_MS),
  };
}

/** What a retention pass removed (rows, partitions, pages given back), by kind. */
export type Removed = Record<string, number>;

/** A pass as the store reports it. */
export interface RetentionReport {
  removed: Removed;
  /** How long the pass took, steps and the waits between them included. */
  ms: number;
}

/** The database's part of retention, and whatever upkeep comes with it (partitions, free pages). */
export interface Maintenance {
  /** One whole pass; `now` places the partitions to make ahead. Stops between steps once `signal` aborts. */
  run(cutoffs: RetentionCutoffs, now: number, signal: AbortSignal): Promise<Removed>;
}
