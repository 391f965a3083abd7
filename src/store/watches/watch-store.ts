/**
 * Watches in the history database (SQLite or PostgreSQL), so that they survive restarts and
 * several instances share them. Every step another instance could take at the same time is
 * a conditional write, and the row count says who won:
 *  - a new watch, and a verification, count and write under one lock (watch-caps.ts);
 *  - a check is claimed by moving `next_check_at` forward from a due value;
 *  - a state change is saved only while `sequence` is still the one the check started from,
 *    with its event, and a delivery attempt is fenced by its lease (watch-deliveries.ts);
 *  - events, logs and old watches are kept within bounds (watch-retention.ts).
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema.js';
import { kyselyTransaction, type Transact } from '../transact.js';
import { insertWithinCaps, markVerified } from './watch-caps.js';
import {
  claimTest,
  deliveries,
  dueEvents,
  finishAttempt,
  inBackground,
  leaseEvent,
  logAttempt,
  pendingCount,
  releaseLease,
  saveObservation,
} from './watch-deliveries.js';
import { storedKey } from './watch-keys.js';
import { expireUnverified, pruneWatches } from './watch-retention.js';
import type { CapRefusal, DeliveryAttempt, DueEvent, WatchCaps, WatchDeliveryRow, WatchEventRow, WatchObservation, WatchRetention, WatchRow } from './watch-rows.js';

export {
  NEW_WATCH_STATE,
  type CapRefusal,
  type DeliveryAttempt,
  type DueEvent,
  type WatchCaps,
  type WatchDeliveryRow,
  type WatchEventRow,
  type WatchObservation,
  type WatchRetention,
  type WatchRow,
} from './watch-rows.js';

export class WatchStore {
  /** `transact` runs the store's transactions (transact.ts); Kysely's own unless told otherwise. */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly transact: Transact = kyselyTransaction,
  ) {}

  /** Inserts a watch unless a cap refuses it; which one did, or null when inserted. */
  insertWithinCaps(watch: WatchRow, caps: WatchCaps): Promise<CapRefusal | null> {
    return insertWithinCaps(this.db, this.transact, watch, caps);
  }

  /** Inserts a watch as it is (tests, and rows restored by hand). */
  async insert(watch: WatchRow): Promise<void> {
    await this.db.insertInto('watches').values(watch).execute();
  }

  async get(id: string): Promise<WatchRow | undefined> {
    return this.db.selectFrom('watches').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Deletes the watch, its events and its log; false when there was none. */
  async delete(id: string): Promise<boolean> {
    return this.transact(this.db, async (trx) => {
      await trx.deleteFrom('watch_events').where('watch_id', '=', id).execute();
      await trx.deleteFrom('watch_deliveries').where('watch_id', '=', id).execute();
      const result = await trx.deleteFrom('watches').where('id', '=', id).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    });
  }

  /**
   * Up to `limit` watches due for a check at `now`, each claimed for this instance by moving
   * its next check to `nextAt`; a watch another instance claimed first is left out. Verified
   * watches come before those only looking for a proof (unverified, paused), and within each
   * the clients take turns: a client's second due watch comes after every client's first.
   */
  async claimDue(now: number, limit: number, nextAt: number): Promise<WatchRow[]> {
    const ranked = this.db
      .selectFrom('watches')
      .select((eb) => [
        'id',
        'next_check_at',
        sql<number>`case when verified_at is null or paused_at is not null then 1 else 0 end`.as('proof_only'),
        eb.fn
          .agg<number>('row_number')
          .over((over) => over.partitionBy(['client_hash']).orderBy('next_check_at').orderBy('id'))
          .as('turn'),
      ])
      .where('next_check_at', '<=', now);
    const due = await inBackground(this.db, this.transact, (db) =>
      db.selectFrom(ranked.as('r')).select('r.id').orderBy('r.proof_only').orderBy('r.turn').orderBy('r.next_check_at').limit(limit).execute(),
    );
    if (due.length === 0) return [];
    const claimed = await this.db
      .updateTable('watches')
      .set({ next_check_at: nextAt })
      .where(
        'id',
        'in',
        due.map((row) => row.id),
      )
      .where('next_check_at', '<=', now)
      .returningAll()
      .execute();
    const order = new Map(due.map((row, index) => [row.id, index]));
    return claimed.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
  }

  /** Moves a watch's next check; `rechecks` counts the undecided answers in a row. */
  async reschedule(id: string, at: number, rechecks = 0): Promise<void> {
    await this.db.updateTable('watches').set({ next_check_at: at, rechecks }).where('id', '=', id).execute();
  }

  /**
   * Marks a watch verified (or a paused one active again) unless WATCHES_PER_SERVER or
   * WATCHES_MAX refuses it; which one did, or null.
   */
  markVerified(watch: WatchRow, by: string, now: number, txtName: string | null, caps: WatchCaps): Promise<CapRefusal | null> {
    return markVerified(this.db, this.transact, watch, by, now, txtName, caps);
  }

  /** Notes where the TXT proof of a watch is looked for (the name its checks connect to). */
  async noteTxtName(id: string, txtName: string | null): Promise<void> {
    await this.db.updateTable('watches').set({ txt_name: txtName }).where('id', '=', id).execute();
  }

  /** Deletes unverified watches whose window has passed; returns how many. */
  expireUnverified(now: number): Promise<number> {
    return expireUnverified(this.db, now);
  }

  /**
   * Saves a check's observation, and its event when the state changed, if no other instance
   * saved one since `watch` was read (its `sequence`). False: the other instance's stands.
   */
  saveObservation(watch: WatchRow, observation: WatchObservation, event: { kind: string; body: string; now: number } | null): Promise<boolean> {
    return saveObservation(this.db, this.transact, watch, observation, event);
  }

  /** Events whose next attempt is due and that no lease holds, oldest first (asked every second). */
  dueEvents(now: number, limit: number): Promise<DueEvent[]> {
    return dueEvents(this.db, this.transact, now, limit);
  }

  /** Leases one attempt of an event until `until` under the fencing `token`; false when it cannot. */
  leaseEvent(event: WatchEventRow, now: number, until: number, token: string): Promise<boolean> {
    return leaseEvent(this.db, event, now, until, token);
  }

  /**
   * Logs an attempt and moves its event on, if the lease `token` still holds it (false: the
   * lease was lost and nothing was written); the log keeps the newest `keep` attempts.
   */
  finishAttempt(attempt: DeliveryAttempt, next: { outcome: 'delivered' | 'gave_up' } | { retryAt: number }, keep: number, token: string): Promise<boolean> {
    return finishAttempt(this.db, this.transact, attempt, next, keep, token);
  }

  /** Gives a leased event back without an attempt, due again at `at` (a budget spent, a stop). */
  releaseLease(event: WatchEventRow, token: string, at: number): Promise<void> {
    return releaseLease(this.db, event, token, at);
  }

  /** Logs an attempt that belongs to no event (a test delivery). */
  logAttempt(attempt: DeliveryAttempt, keep: number): Promise<void> {
    return logAttempt(this.db, this.transact, attempt, keep);
  }

  /** Notes a test delivery at `now` unless the last one was less than `gapMs` ago; false then. */
  claimTest(id: string, now: number, gapMs: number): Promise<boolean> {
    return claimTest(this.db, id, now, gapMs);
  }

  /** The newest attempts of a watch, newest first. */
  deliveries(watchId: string, limit: number): Promise<WatchDeliveryRow[]> {
    return deliveries(this.db, watchId, limit);
  }

  /** Events of a watch not yet delivered nor given up. */
  pendingCount(watchId: string): Promise<number> {
    return pendingCount(this.db, watchId);
  }

  /** Keeps events and logs within their bounds and deletes watches paused for too long. */
  prune(now: number, retention: WatchRetention): Promise<void> {
    return pruneWatches(this.db, this.transact, now, retention, (id) => this.delete(id));
  }

  /** The stored key called `name`, made by `create` and stored when there is none (the first instance's wins). */
  key(name: string, create: () => string): Promise<string> {
    return storedKey(this.db, name, create);
  }
}
