/**
 * Watches in the history database (SQLite or PostgreSQL), so that they survive restarts and
 * several instances share them. Every step another instance could take at the same time is
 * a conditional write, and the row count says who won:
 *  - a new watch, and a verification, first lock one row (an UPDATE of `watch_keys`), then
 *    count and write in the same transaction: on SQLite the UPDATE takes the single writer's
 *    lock, on PostgreSQL the row lock, so two creations never both pass a cap;
 *  - a check is claimed by moving `next_check_at` forward from a due value;
 *  - a state change is saved only while `sequence` is still the one the check started from,
 *    and its event row (primary key: watch, sequence) is inserted in the same transaction;
 *  - a delivery attempt is claimed by a lease on the event row with a fencing token: only the
 *    lease's holder can finish the attempt.
 */
import type { Insertable, Kysely, Selectable, Transaction } from 'kysely';
import { sql } from 'kysely';
import { WATCH_CREATION_LOCK } from './migrations.js';
import type { Database, WatchDeliveriesTable, WatchEventsTable, WatchesTable } from './schema.js';

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

export class WatchStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** Inserts a watch unless a cap refuses it; which one did, or null when inserted. */
  async insertWithinCaps(watch: WatchRow, caps: WatchCaps): Promise<CapRefusal | null> {
    return this.db.transaction().execute(async (trx) => {
      await lockCreations(trx);
      const n = await countsFor(trx, watch.client_hash, watch.server_key);
      if (n.unverified >= caps.unverifiedPerClient) return 'unverified';
      if (n.client >= caps.perClient) return 'client';
      if (n.verified >= caps.max) return 'total';
      await trx.insertInto('watches').values(watch).execute();
      return null;
    });
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
    return this.db.transaction().execute(async (trx) => {
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
    const due = await this.inBackground((db) =>
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
  async markVerified(watch: WatchRow, by: string, now: number, txtName: string | null, caps: WatchCaps): Promise<CapRefusal | null> {
    return this.db.transaction().execute(async (trx) => {
      await lockCreations(trx);
      if (watch.verified_at === null) {
        const n = await countsFor(trx, watch.client_hash, watch.server_key);
        // A watch created before servers were counted has no key: only WATCHES_MAX applies to it.
        if (watch.server_key !== '' && n.server >= caps.perServer) return 'server';
        if (n.verified >= caps.max) return 'total';
      }
      await trx
        .updateTable('watches')
        .set({
          verified_at: watch.verified_at ?? now,
          verified_by: by,
          expires_at: null,
          proof_seen_at: now,
          paused_at: null,
          txt_name: txtName,
          // A resumed watch learns its server's state again before it reports a change.
          ...(watch.paused_at !== null ? { state: 'unknown', failures: 0, fail_since: null, above: 0 } : {}),
        })
        .where('id', '=', watch.id)
        .execute();
      return null;
    });
  }

  /** Notes where the TXT proof of a watch is looked for (the name its checks connect to). */
  async noteTxtName(id: string, txtName: string | null): Promise<void> {
    await this.db.updateTable('watches').set({ txt_name: txtName }).where('id', '=', id).execute();
  }

  /** Deletes unverified watches whose window has passed; returns how many. */
  async expireUnverified(now: number): Promise<number> {
    const result = await this.db.deleteFrom('watches').where('verified_at', 'is', null).where('expires_at', '<=', now).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /**
   * Saves a check's observation, and its event when the state changed, if no other instance
   * saved one since `watch` was read (its `sequence`). False: the other instance's stands.
   */
  async saveObservation(watch: WatchRow, observation: WatchObservation, event: { kind: string; body: string; now: number } | null): Promise<boolean> {
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
  async dueEvents(now: number, limit: number): Promise<DueEvent[]> {
    return this.inBackground((db) =>
      db
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
   * A read nobody waits for, in a transaction: with SQLite that runs it on the writer's
   * connection, so that the reader's thread starts only with a read somebody asked for.
   */
  private inBackground<T>(read: (db: Transaction<Database>) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(read);
  }

  /**
   * Leases one attempt of an event until `until` under the fencing `token`; false when
   * another instance holds it, has made this attempt, or the event is done.
   */
  async leaseEvent(event: WatchEventRow, now: number, until: number, token: string): Promise<boolean> {
    const result = await this.db
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
  async finishAttempt(
    attempt: DeliveryAttempt,
    next: { outcome: 'delivered' | 'gave_up' } | { retryAt: number },
    keep: number,
    token: string,
  ): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
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
  async releaseLease(event: WatchEventRow, token: string, at: number): Promise<void> {
    await this.db
      .updateTable('watch_events')
      .set({ lease_until: 0, lease_token: null, next_attempt_at: at })
      .where('watch_id', '=', event.watch_id)
      .where('sequence', '=', event.sequence)
      .where('lease_token', '=', token)
      .execute();
  }

  /** Logs an attempt that belongs to no event (a test delivery). */
  async logAttempt(attempt: DeliveryAttempt, keep: number): Promise<void> {
    await this.db.transaction().execute((trx) => insertAttempt(trx, attempt, keep));
  }

  /** Notes a test delivery at `now` unless the last one was less than `gapMs` ago; false then. */
  async claimTest(id: string, now: number, gapMs: number): Promise<boolean> {
    const result = await this.db
      .updateTable('watches')
      .set({ last_test_at: now })
      .where('id', '=', id)
      .where((eb) => eb.or([eb('last_test_at', 'is', null), eb('last_test_at', '<=', now - gapMs)]))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /** The newest attempts of a watch, newest first. */
  async deliveries(watchId: string, limit: number): Promise<WatchDeliveryRow[]> {
    return this.db.selectFrom('watch_deliveries').selectAll().where('watch_id', '=', watchId).orderBy('id', 'desc').limit(limit).execute();
  }

  /** Events of a watch not yet delivered nor given up. */
  async pendingCount(watchId: string): Promise<number> {
    const row = await this.db
      .selectFrom('watch_events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('watch_id', '=', watchId)
      .where('outcome', 'is', null)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * Keeps events and logs within their age and count bounds and deletes watches paused for
   * too long. Events a lease holds are left to their holder.
   */
  async prune(now: number, retention: WatchRetention): Promise<void> {
    const eventCutoff = now - retention.eventMaxAgeMs;
    await this.db
      .updateTable('watch_events')
      .set({ outcome: 'gave_up', next_attempt_at: null })
      .where('outcome', 'is', null)
      .where('created_at', '<', eventCutoff)
      .where('lease_until', '<=', now)
      .execute();
    await this.db.deleteFrom('watch_events').where('outcome', 'is not', null).where('created_at', '<', eventCutoff).execute();
    await this.db
      .deleteFrom('watch_events')
      .where('lease_until', '<=', now)
      .where(({ eb, selectFrom }) =>
        eb('sequence', '<=', selectFrom('watches').select(sql<number>`watches.sequence - ${retention.eventsPerWatch}`.as('oldest')).whereRef('watches.id', '=', 'watch_events.watch_id')),
      )
      .execute();
    await this.db.deleteFrom('watch_deliveries').where('at', '<', now - retention.logMaxAgeMs).execute();
    const paused = await this.inBackground((db) => db.selectFrom('watches').select('id').where('paused_at', '<', retention.pausedBefore).execute());
    for (const { id } of paused) await this.delete(id);
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

/**
 * Every creation and verification updates this one row first: SQLite's write lock, or
 * PostgreSQL's row lock, then holds the others back until the transaction ends.
 */
async function lockCreations(trx: Transaction<Database>): Promise<void> {
  await trx
    .insertInto('watch_keys')
    .values({ name: WATCH_CREATION_LOCK, value: '' })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  await trx.updateTable('watch_keys').set({ value: '' }).where('name', '=', WATCH_CREATION_LOCK).execute();
}

/** What the caps count: a client's unverified and all its watches, a server's verified ones, all verified ones. */
async function countsFor(trx: Transaction<Database>, clientHash: string, serverKey: string) {
  const row = await trx
    .selectNoFrom((eb) => {
      const count = () => eb.selectFrom('watches').select(eb.fn.countAll<number>().as('n'));
      return [
        count().where('client_hash', '=', clientHash).where('verified_at', 'is', null).as('unverified'),
        count().where('client_hash', '=', clientHash).as('client'),
        count().where('server_key', '=', serverKey).where('verified_at', 'is not', null).as('server'),
        count().where('verified_at', 'is not', null).as('verified'),
      ];
    })
    .executeTakeFirstOrThrow();
  return { unverified: Number(row.unverified), client: Number(row.client), server: Number(row.server), verified: Number(row.verified) };
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
