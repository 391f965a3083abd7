/**
 * A watch's events and their delivery: a state change is saved only while `sequence` is still
 * the one its check started from, its event row (primary key: watch, sequence) inserted in the
 * same transaction; a delivery attempt is claimed by a lease on the event row with a fencing
 * token, and only the lease's holder can finish the attempt.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';
import type { Transact } from '../transact.js';
import type { DeliveryAttempt, DueEvent, WatchDeliveryRow, WatchEventRow, WatchObservation, WatchRow } from './watch-rows.js';

/**
 * A read nobody waits for, in a transaction: with SQLite it is part of its watch operation, run
 * on the writer's connection, so that the reader's thread starts only with a read somebody
 * asked for.
 */
export function inBackground<T>(db: Kysely<Database>, transact: Transact, read: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  return transact(db, read);
}

/**
 * Saves a check's observation, and its event when the state changed, if no other instance
 * saved one since `watch` was read (its `sequence`). False: the other instance's stands.
 */
export function saveObservation(
  db: Kysely<Database>,
  transact: Transact,
  watch: WatchRow,
  observation: WatchObservation,
  event: { kind: string; body: string; now: number } | null,
): Promise<boolean> {
  return transact(db, async (trx) => {
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
          lease_token: null,
          outcome: null,
        })
        .execute();
    }
    return true;
  });
}

/**
 * Events whose next attempt is due and that no lease holds, oldest first, with their
 * watch's client and webhook. Asked every second, in the background.
 */
export function dueEvents(db: Kysely<Database>, transact: Transact, now: number, limit: number): Promise<DueEvent[]> {
  return inBackground(db, transact, (trx) =>
    trx
      .selectFrom('watch_events')
      .innerJoin('watches', 'watches.id', 'watch_events.watch_id')
      .selectAll('watch_events')
      .select(['watches.client_hash', 'watches.webhook_url'])
      .where('watch_events.next_attempt_at', '<=', now)
      .where('watch_events.lease_until', '<=', now)
      .orderBy('watch_events.next_attempt_at')
      .orderBy('watch_events.watch_id')
      .orderBy('watch_events.sequence')
      .limit(limit)
      .execute(),
  );
}

/**
 * Leases one attempt of an event until `until` under the fencing `token`; false when
 * another instance holds it, has made this attempt, or the event is done.
 */
export async function leaseEvent(db: Kysely<Database>, event: WatchEventRow, now: number, until: number, token: string): Promise<boolean> {
  const result = await db
    .updateTable('watch_events')
    .set({ lease_until: until, lease_token: token })
    .where('watch_id', '=', event.watch_id)
    .where('sequence', '=', event.sequence)
    .where('attempts', '=', event.attempts)
    .where('lease_until', '<=', now)
    .where('outcome', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Logs an attempt and moves its event on (delivered, given up, or due again at `retryAt`),
 * if the lease `token` still holds it. False: the lease was lost and nothing was written.
 * The log keeps the newest `keep` attempts of the watch.
 */
export function finishAttempt(
  db: Kysely<Database>,
  transact: Transact,
  attempt: DeliveryAttempt,
  next: { outcome: 'delivered' | 'gave_up' } | { retryAt: number },
  keep: number,
  token: string,
): Promise<boolean> {
  return transact(db, async (trx) => {
    const result = await trx
      .updateTable('watch_events')
      .set(
        'outcome' in next
          ? { attempts: attempt.attempt, outcome: next.outcome, next_attempt_at: null, lease_until: 0, lease_token: null }
          : { attempts: attempt.attempt, next_attempt_at: next.retryAt, lease_until: 0, lease_token: null },
      )
      .where('watch_id', '=', attempt.watch_id)
      .where('sequence', '=', attempt.sequence)
      .where('lease_token', '=', token)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) return false;
    await insertAttempt(trx, attempt, keep);
    return true;
  });
}

/** Gives a leased event back without an attempt, due again at `at` (a budget spent, a stop). */
export async function releaseLease(db: Kysely<Database>, event: WatchEventRow, token: string, at: number): Promise<void> {
  await db
    .updateTable('watch_events')
    .set({ lease_until: 0, lease_token: null, next_attempt_at: at })
    .where('watch_id', '=', event.watch_id)
    .where('sequence', '=', event.sequence)
    .where('lease_token', '=', token)
    .execute();
}

/** Logs an attempt that belongs to no event (a test delivery). */
export async function logAttempt(db: Kysely<Database>, transact: Transact, attempt: DeliveryAttempt, keep: number): Promise<void> {
  await transact(db, (trx) => insertAttempt(trx, attempt, keep));
}

/** Notes a test delivery at `now` unless the last one was less than `gapMs` ago; false then. */
export async function claimTest(db: Kysely<Database>, id: string, now: number, gapMs: number): Promise<boolean> {
  const result = await db
    .updateTable('watches')
    .set({ last_test_at: now })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('last_test_at', 'is', null), eb('last_test_at', '<=', now - gapMs)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** The newest attempts of a watch, newest first. */
export function deliveries(db: Kysely<Database>, watchId: string, limit: number): Promise<WatchDeliveryRow[]> {
  return db.selectFrom('watch_deliveries').selectAll().where('watch_id', '=', watchId).orderBy('id', 'desc').limit(limit).execute();
}

/** Events of a watch not yet delivered nor given up. */
export async function pendingCount(db: Kysely<Database>, watchId: string): Promise<number> {
  const row = await db
    .selectFrom('watch_events')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('watch_id', '=', watchId)
    .where('outcome', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
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
