/**
 * Watches in the history database (SQLite or PostgreSQL), so that they survive restarts and
 * several instances share them. Every step another instance could take at the same time is
 * a conditional write, and the row count says who won:
 *  - a check is claimed by moving `next_check_at` forward from the value that was read;
 *  - a state change is saved only while `sequence` is still the one the check started from,
 *    and its event row (primary key: watch, sequence) is inserted in the same transaction;
 *  - a delivery attempt is claimed by a lease on the event row.
 */
import type { Insertable, Kysely, Selectable } from 'kysely';
import type { Database, WatchDeliveriesTable, WatchEventsTable, WatchesTable } from './schema.js';

export type WatchRow = Selectable<WatchesTable>;
export type WatchEventRow = Selectable<WatchEventsTable>;
export type WatchDeliveryRow = Selectable<WatchDeliveriesTable>;

/** What a check found, to save on the watch row. */
export interface WatchObservation {
  state: string;
  failures: number;
  fail_since: number | null;
  above: number;
  last_checked_at: number | null;
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
} as const satisfies Partial<WatchRow>;

/** One delivery attempt, for the log. */
export type DeliveryAttempt = Omit<Insertable<WatchDeliveriesTable>, 'id'>;

export class WatchStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** Unverified watches a client (its hashed key) holds. */
  async unverifiedCount(clientHash: string): Promise<number> {
    return this.countUnset('watches', 'client_hash', clientHash, 'verified_at');
  }

  async insert(watch: WatchRow): Promise<void> {
    await this.db.insertInto('watches').values(watch).execute();
  }

  async get(id: string): Promise<WatchRow | undefined> {
    return this.db.selectFrom('watches').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Deletes the watch, its events and its log; false when there was none. */
  async delete(id: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('watch_events').where('watch_id', '=', id).execute();
      await trx.deleteFrom('watch_deliveries').where('watch_id', '=', id).execute();
      const result = await trx.deleteFrom('watches').where('id', '=', id).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    });
  }

  /**
   * Up to `limit` watches due for a check at `now`, each claimed for this instance by moving
   * its next check to `nextAt(watch)`; a watch another instance claimed first is left out.
   */
  async claimDue(now: number, limit: number, nextAt: (watch: WatchRow) => number): Promise<WatchRow[]> {
    const due = await this.db
      .selectFrom('watches')
      .selectAll()
      .where('next_check_at', '<=', now)
      .orderBy('next_check_at')
      .limit(limit)
      .execute();
    const claimed: WatchRow[] = [];
    for (const watch of due) {
      const next = nextAt(watch);
      const result = await this.db
        .updateTable('watches')
        .set({ next_check_at: next })
        .where('id', '=', watch.id)
        .where('next_check_at', '=', watch.next_check_at)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 1) claimed.push({ ...watch, next_check_at: next });
    }
    return claimed;
  }

  /** Moves a watch's next check (the owner's "check now"). */
  async setNextCheck(id: string, at: number): Promise<void> {
    await this.db.updateTable('watches').set({ next_check_at: at }).where('id', '=', id).execute();
  }

  async markVerified(id: string, by: string, now: number): Promise<void> {
    await this.db
      .updateTable('watches')
      .set({ verified_at: now, verified_by: by, expires_at: null })
      .where('id', '=', id)
      .where('verified_at', 'is', null)
      .execute();
  }

  /** Deletes unverified watches whose window has passed; returns how many. */
  async expireUnverified(now: number): Promise<number> {
    const result = await this.db
      .deleteFrom('watches')
      .where('verified_at', 'is', null)
      .where('expires_at', '<=', now)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /**
   * Saves a check's observation, and its event when the state changed, if no other instance
   * saved one since `watch` was read (its `sequence`). False: the other instance's stands.
   */
  async saveObservation(
    watch: WatchRow,
    observation: WatchObservation,
    event: { kind: string; body: string; now: number } | null,
  ): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const sequence = event ? watch.sequence + 1 : watch.sequence;
      const result = await trx
        .updateTable('watches')
        .set({ ...observation, sequence })
        .where('id', '=', watch.id)
        .where('sequence', '=', watch.sequence)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) return false;
      if (event) {
        await trx
          .insertInto('watch_events')
          .values({
            watch_id: watch.id,
            sequence,
            kind: event.kind,
            body: event.body,
            created_at: event.now,
            attempts: 0,
            next_attempt_at: event.now,
            lease_until: 0,
            outcome: null,
          })
          .execute();
      }
      return true;
    });
  }

  /** Events whose next attempt is due, oldest first. */
  async dueEvents(now: number, limit: number): Promise<WatchEventRow[]> {
    return this.db
      .selectFrom('watch_events')
      .selectAll()
      .where('next_attempt_at', '<=', now)
      .where('lease_until', '<=', now)
      .orderBy('next_attempt_at')
      .limit(limit)
      .execute();
  }

  /** Claims one attempt of an event until `until`; false when another instance holds it or it is done. */
  async leaseEvent(event: WatchEventRow, now: number, until: number): Promise<boolean> {
    const result = await this.db
      .updateTable('watch_events')
      .set({ lease_until: until })
      .where('watch_id', '=', event.watch_id)
      .where('sequence', '=', event.sequence)
      .where('attempts', '=', event.attempts)
      .where('lease_until', '<=', now)
      .where('outcome', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /**
   * Logs an attempt and moves its event on: delivered, given up, or due again at `retryAt`.
   * The log keeps the newest `keep` attempts of the watch.
   */
  async finishAttempt(
    attempt: DeliveryAttempt,
    next: { outcome: 'delivered' | 'gave_up' } | { retryAt: number },
    keep: number,
  ): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('watch_events')
        .set(
          'outcome' in next
            ? { attempts: attempt.attempt, outcome: next.outcome, next_attempt_at: null, lease_until: 0 }
            : { attempts: attempt.attempt, next_attempt_at: next.retryAt, lease_until: 0 },
        )
        .where('watch_id', '=', attempt.watch_id)
        .where('sequence', '=', attempt.sequence)
        .execute();
      await insertAttempt(trx, attempt, keep);
    });
  }

  /** Logs an attempt that belongs to no event (a test delivery). */
  async logAttempt(attempt: DeliveryAttempt, keep: number): Promise<void> {
    await this.db.transaction().execute((trx) => insertAttempt(trx, attempt, keep));
  }

  /** The newest attempts of a watch, newest first. */
  async deliveries(watchId: string, limit: number): Promise<WatchDeliveryRow[]> {
    return this.db
      .selectFrom('watch_deliveries')
      .selectAll()
      .where('watch_id', '=', watchId)
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
  }

  /** Events of a watch not yet delivered nor given up. */
  async pendingCount(watchId: string): Promise<number> {
    return this.countUnset('watch_events', 'watch_id', watchId, 'outcome');
  }

  /** Rows of `table` whose `column` is `value` and whose `unset` column is null. */
  private async countUnset(table: 'watches' | 'watch_events', column: string, value: string, unset: string): Promise<number> {
    const { ref } = this.db.dynamic;
    const row = await this.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where(ref(column), '=', value)
      .where(ref(unset), 'is', null)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** The stored key called `name`, made by `create` and stored when there is none (the first instance's wins). */
  async key(name: string, create: () => string): Promise<string> {
    const found = await this.db.selectFrom('watch_keys').select('value').where('name', '=', name).executeTakeFirst();
    if (found) return found.value;
    await this.db
      .insertInto('watch_keys')
      .values({ name, value: create() })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    const stored = await this.db.selectFrom('watch_keys').select('value').where('name', '=', name).executeTakeFirstOrThrow();
    return stored.value;
  }
}

async function insertAttempt(trx: Kysely<Database>, attempt: DeliveryAttempt, keep: number): Promise<void> {
  await trx.insertInto('watch_deliveries').values(attempt).execute();
  const kept = await trx
    .selectFrom('watch_deliveries')
    .select('id')
    .where('watch_id', '=', attempt.watch_id)
    .orderBy('id', 'desc')
    .offset(keep)
    .limit(1)
    .executeTakeFirst();
  if (kept) {
    await trx.deleteFrom('watch_deliveries').where('watch_id', '=', attempt.watch_id).where('id', '<=', kept.id).execute();
  }
}
