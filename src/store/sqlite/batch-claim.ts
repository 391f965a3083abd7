/**
 * The group commit's ledger (batch-ledger.ts) as SQLite's writer thread runs it: prepared
 * statements on its connection, no Kysely, so that the store's worker threads do not load
 * Kysely's modules into their isolates for it.
 */
import type { WriteBatch } from '../history/write-queue.js';
import type { SqliteConnection } from './binding.js';

const DAY_MS = 24 * 3_600_000;
/** Applied batch ids no writer confirmed (an instance stopped between a commit and its answer). */
export const APPLIED_KEPT_MS = 7 * DAY_MS;
/** Batches set aside. */
export const DEAD_KEPT_MS = 30 * DAY_MS;

/**
 * Records the batch as applied on the writer's connection, inside its transaction, and forgets
 * the ids its queue has seen committed; false when the batch was applied already.
 */
export function sqliteBatchClaim(database: SqliteConnection): (batch: WriteBatch, now?: number) => boolean {
  const forget = database.prepare('DELETE FROM applied_batches WHERE id = ?');
  const forgetOld = database.prepare('DELETE FROM applied_batches WHERE applied_at < ?');
  const claim = database.prepare('INSERT INTO applied_batches (id, applied_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING');
  return (batch, now = Date.now()) => {
    for (const id of batch.settled) forget.run(id);
    if (batch.expireBefore !== null) forgetOld.run(now - APPLIED_KEPT_MS);
    return claim.run(batch.id, now).changes === 1;
  };
}
