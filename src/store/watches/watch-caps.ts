/**
 * Watches and their caps: a creation, and a verification, first lock one row (an UPDATE of
 * `watch_keys`), then count and write in the same transaction: on SQLite the UPDATE takes the
 * single writer's lock, on PostgreSQL the row lock, so two creations never both pass a cap.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';
import type { Transact } from '../transact.js';
import { WATCH_CREATION_LOCK, type CapRefusal, type WatchCaps, type WatchRow } from './watch-rows.js';

/** Inserts a watch unless a cap refuses it; which one did, or null when inserted. */
export function insertWithinCaps(db: Kysely<Database>, transact: Transact, watch: WatchRow, caps: WatchCaps): Promise<CapRefusal | null> {
  return transact(db, async (trx) => {
    await lockCreations(trx);
    const n = await countsFor(trx, watch.client_hash, watch.server_key);
    if (n.unverified >= caps.unverifiedPerClient) return 'unverified';
    if (n.client >= caps.perClient) return 'client';
    if (n.verified >= caps.max) return 'total';
    await trx.insertInto('watches').values(watch).execute();
    return null;
  });
}

/**
 * Marks a watch verified (or a paused one active again) unless WATCHES_PER_SERVER or
 * WATCHES_MAX refuses it; which one did, or null.
 */
export function markVerified(
  db: Kysely<Database>,
  transact: Transact,
  watch: WatchRow,
  by: string,
  now: number,
  txtName: string | null,
  caps: WatchCaps,
): Promise<CapRefusal | null> {
  return transact(db, async (trx) => {
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

/**
 * Every creation and verification updates this one row first: SQLite's write lock, or
 * PostgreSQL's row lock, then holds the others back until the transaction ends.
 */
async function lockCreations(trx: Kysely<Database>): Promise<void> {
  await trx
    .insertInto('watch_keys')
    .values({ name: WATCH_CREATION_LOCK, value: '' })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  await trx.updateTable('watch_keys').set({ value: '' }).where('name', '=', WATCH_CREATION_LOCK).execute();
}

/** What the caps count: a client's unverified and all its watches, a server's verified ones, all verified ones. */
async function countsFor(trx: Kysely<Database>, clientHash: string, serverKey: string) {
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
