/**
 * The rows of watches, their events and delivery log, and the values the watch store takes and
 * gives (watch-store.ts); the name of the row creations lock. No logic: migrations and the
 * store's parts import this without the store.
 */
import type { Insertable, Selectable } from 'kysely';
import type { WatchDeliveriesTable, WatchEventsTable, WatchesTable } from '../schema.js';

export type WatchRow = Selectable<WatchesTable>;
export type WatchEventRow = Selectable<WatchEventsTable>;
export type WatchDeliveryRow = Selectable<WatchDeliveriesTable>;

/** A due event, with what the delivery loop needs of its watch to share its slots fairly. */
export type DueEvent = WatchEventRow & { client_hash: string; webhook_url: string };

/** What a check found, to save on the watch row. */
export interface WatchObservation {
  state: string;
  failures: number;
  fail_since: number | null;
  above: number;
  last_checked_at: number | null;
  proof_seen_at?: number | null;
  txt_checked_at?: number | null;
  txt_name?: string | null;
  paused_at?: number | null;
  /** Undecided answers in a row; left as it is when absent. */
  rechecks?: number;
}

/** What a new watch knows of its server and events: nothing yet. */
export const NEW_WATCH_STATE = {
  verified_at: null,
  verified_by: null,
  last_checked_at: null,
  state: 'unknown',
  failures: 0,
  fail_since: null,
  above: 0,
  sequence: 0,
  proof_seen_at: null,
  txt_checked_at: null,
  paused_at: null,
  rechecks: 0,
  last_test_at: null,
} as const satisfies Partial<WatchRow>;

/** One delivery attempt, for the log. */
export type DeliveryAttempt = Omit<Insertable<WatchDeliveriesTable>, 'id'>;

/** The caps a new watch, and a verification, must stay within (docs/hostile-clients.md, "Watches"). */
export interface WatchCaps {
  unverifiedPerClient: number;
  perClient: number;
  perServer: number;
  max: number;
}

/** Which cap refused a creation or a verification. */
export type CapRefusal = 'unverified' | 'client' | 'server' | 'total';

/** Age and count bounds of events and delivery logs. */
export interface WatchRetention {
  /** Events older than this are given up if pending, deleted if finished. */
  eventMaxAgeMs: number;
  /** Newest events kept per watch, pending or not. */
  eventsPerWatch: number;
  /** Delivery attempts older than this leave the log. */
  logMaxAgeMs: number;
  /** Watches paused since before this are deleted. */
  pausedBefore: number;
}

/** The watch_keys row a creation locks (an UPDATE) while it counts and inserts. */
export const WATCH_CREATION_LOCK = 'creation-lock';
