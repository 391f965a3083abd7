/**
 * The group commit's ledger: which batches a database has applied, and the batches it refused.
 *
 * - Each batch has an id (write-queue.ts) and its transaction records it in `applied_batches`
 *   first: a batch retried after its commit succeeded but the answer was lost (the connection
 *   dropped after COMMIT, the worker died) finds its id there and changes nothing, so its
 *   checks, counters and look-ups count once. A row is needed only until its writer knows the
 *   commit happened: the next transaction of the same queue deletes it (`settled`), and rows a
 *   stopped or killed instance left are deleted once older than `APPLIED_KEPT_MS`.
 * - A batch the database keeps refusing for what it holds (a value out of a column's range, a
 *   constraint: `refusedByDatabase`) while it takes other writes is set aside in
 *   `dead_batches` as JSON, so the rows behind it flow. Those rows are kept `DEAD_KEPT_MS` for
 *   an operator to look at. A failure that says the database cannot write now (a full disk)
 *   never sets a batch aside; nor is a batch dropped when writing it there fails.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema.js';
import { APPLIED_KEPT_MS, DEAD_KEPT_MS } from '../sqlite/batch-claim.js';
import type { WriteBatch } from './write-queue.js';

/** Longest error text kept with a batch set aside. */
const ERROR_CHARS = 500;

type LedgerTables = {
  applied_batches: { id: string; applied_at: number };
  dead_batches: { id: string; failed_at: number; attempts: number; error: string; body: string };
};

/** The migration that adds both tables (the same on both databases). */
export async function createBatchLedger(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('applied_batches')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('applied_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('applied_batches_at').on('applied_batches').column('applied_at').execute();
  await db.schema
    .createTable('dead_batches')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('failed_at', 'bigint', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('error', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('dead_batches_at').on('dead_batches').column('failed_at').execute();
}

/**
 * Records the batch as applied within `trx`, the batch's own transaction on PostgreSQL, and
 * forgets the ids its queue has seen committed, in one statement; false when the batch was
 * applied already (nothing to write). Once a minute (the batch that expires look-ups) ids no
 * one confirmed go after APPLIED_KEPT_MS.
 */
export async function claimBatch(trx: Kysely<Database>, batch: WriteBatch, now = Date.now()): Promise<boolean> {
  if (batch.expireBefore !== null) await sql`DELETE FROM applied_batches WHERE applied_at < ${now - APPLIED_KEPT_MS}`.execute(trx);
  const forget = batch.settled.length > 0 ? sql`WITH forgotten AS (DELETE FROM applied_batches WHERE id IN (${sql.join(batch.settled)})) ` : sql``;
  const { rows } = await sql<{ id: string }>`${forget}INSERT INTO applied_batches (id, applied_at) VALUES (${batch.id}, ${now})
    ON CONFLICT (id) DO NOTHING RETURNING id`.execute(trx);
  return rows.length === 1;
}

/** What a batch holds, as JSON: its checks, look-ups (hashed client keys only), counters and expiry. */
export function batchBody(batch: WriteBatch): string {
  return JSON.stringify({ checks: batch.checks, lookups: batch.lookups, counters: Object.fromEntries(batch.counters), expireBefore: batch.expireBefore });
}

/** Sets a refused batch aside, with the error that refused it, and deletes those past DEAD_KEPT_MS. */
export async function setBatchAside(db: Kysely<Database>, batch: WriteBatch, attempts: number, error: unknown, now = Date.now()): Promise<void> {
  const ledger = db.withTables<LedgerTables>() as unknown as Kysely<LedgerTables>;
  const code = (error as { code?: unknown } | null)?.code;
  const text = `${typeof code === 'string' ? `${code}: ` : ''}${error instanceof Error ? error.message : String(error)}`.slice(0, ERROR_CHARS);
  await ledger.deleteFrom('dead_batches').where('failed_at', '<', now - DEAD_KEPT_MS).execute();
  await ledger
    .insertInto('dead_batches')
    .values({ id: batch.id, failed_at: now, attempts, error: text, body: batchBody(batch) })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

/**
 * Whether a failed write is the database refusing what the batch holds: an error a healthy
 * database gives again for the same batch, and not for others. On SQLite a constraint, a
 * datatype mismatch, a value too big or out of range; on PostgreSQL the SQLSTATE classes 21
 * (cardinality violation), 22 (data exception), 23 (integrity constraint violation) and 54
 * (program limit exceeded); on either a value the driver cannot bind (a TypeError or
 * RangeError without a code, known by name: the SQLite worker's errors cross threads as a
 * name and a message).
 *
 * Anything else says that the database cannot write now, whatever the batch: a full disk, a
 * read-only database, an I/O error, a lock, a lost connection, a shutdown, a stopped SQLite
 * worker, and any failure nobody listed. It never counts against a batch: the queue holds
 * the batch and tries it again.
 */
export function refusedByDatabase(error: unknown): boolean {
  const { code, name } = (error ?? {}) as { code?: unknown; name?: unknown };
  if (typeof code === 'string') return /^SQLITE_(CONSTRAINT|MISMATCH|TOOBIG|RANGE)/.test(code) || /^(21|22|23|54)[0-9A-Z]{3}$/.test(code);
  return name === 'TypeError' || name === 'RangeError';
}
