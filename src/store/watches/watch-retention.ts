/** How long watches' events, delivery logs, unverified and paused watches are kept. */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema.js';
import type { Transact } from '../transact.js';
import { inBackground } from './watch-deliveries.js';
import type { WatchRetention } from './watch-rows.js';

/** Deletes unverified watches whose window has passed; returns how many. */
export async function expireUnverified(db: Kysely<Database>, now: number): Promise<number> {
  const result = await db.deleteFrom('watches').where('verified_at', 'is', null).where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Keeps events and logs within their age and count bounds and deletes watches paused for
 * too long (with `remove`, which takes their events and log too). Events a lease holds are
 * left to their holder.
 */
export async function pruneWatches(
  db: Kysely<Database>,
  transact: Transact,
  now: number,
  retention: WatchRetention,
  remove: (id: string) => Promise<boolean>,
): Promise<void> {
  const eventCutoff = now - retention.eventMaxAgeMs;
  await db
    .updateTable('watch_events')
    .set({ outcome: 'gave_up', next_attempt_at: null })
    .where('outcome', 'is', null)
    .where('created_at', '<', eventCutoff)
    .where('lease_until', '<=', now)
    .execute();
  await db.deleteFrom('watch_events').where('outcome', 'is not', null).where('created_at', '<', eventCutoff).execute();
  await db
    .deleteFrom('watch_events')
    .where('lease_until', '<=', now)
    .where(({ eb, selectFrom }) =>
      eb('sequence', '<=', selectFrom('watches').select(sql<number>`watches.sequence - ${retention.eventsPerWatch}`.as('oldest')).whereRef('watches.id', '=', 'watch_events.watch_id')),
    )
    .execute();
  await db.deleteFrom('watch_deliveries').where('at', '<', now - retention.logMaxAgeMs).execute();
  const paused = await inBackground(db, transact, (trx) => trx.selectFrom('watches').select('id').where('paused_at', '<', retention.pausedBefore).execute());
  for (const { id } of paused) await remove(id);
}
