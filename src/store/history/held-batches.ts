/**
 * Group commits held while the history's tables are being upgraded (a migration runs, or the
 * work after it): each batch is kept where it survives the process within its commit window,
 * as at any other time, and applied through the normal batch path, oldest first, once the
 * tables are current and the group commit writes to them again. A SIGKILL at any moment of an
 * upgrade then loses one commit window of look-ups at most. A batch is applied with its own id,
 * so one applied twice (the process died between applying it and forgetting it) counts once
 * (batch-ledger.ts). That they land after newer batches is harmless: every write keeps the
 * newest of what it meets (a server's latest check, a client's last look-up), as a batch
 * retried after an outage does.
 *
 * Where they are kept:
 * - PostgreSQL: the table `held_batches`, which no migration touches (it takes none of their
 *   locks), shared by the instances: whichever applies them first does; each is deleted in
 *   the transaction that applies it.
 * - SQLite: a file beside the database (`<database>-held`), one line per batch. A table in the
 *   database would not do: the migration's steps and the VACUUM after them hold its one write
 *   lock, the VACUUM for minutes on a large file. The file is emptied once every batch in it
 *   is applied.
 * - An in-memory database: memory (nothing of it outlives the process anyway).
 */
import { open, readFile, rm, stat, type FileHandle } from 'node:fs/promises';
import { sql, type Kysely, type Transaction } from 'kysely';
import { batchBody } from './batch-ledger.js';
import type { Database } from '../schema.js';
import type { CounterName, WriteBatch } from './write-queue.js';

export interface HeldBatches {
  /** Makes where they are kept, if that needs making: before anything is held. */
  prepare?(): Promise<void>;
  /** Keeps `batch`; resolved once it survives the process. */
  hold(batch: WriteBatch): Promise<void>;
  /** Whether batches are held (by this start or an earlier one). */
  any(): Promise<boolean>;
  /**
   * Applies every batch held, oldest first, through the normal batch path, until `signal`
   * aborts, and lets go of where they were kept once all are applied. This process holds none
   * meanwhile: its group commit writes to the database by then.
   */
  release(signal: AbortSignal): Promise<void>;
}

/** A batch as `batchBody` wrote it, with its id. */
function heldBatch(id: string, body: string): WriteBatch {
  const parsed = JSON.parse(body) as Pick<WriteBatch, 'checks' | 'lookups' | 'expireBefore'> & { counters: Record<CounterName, number> };
  return { id, checks: parsed.checks, lookups: parsed.lookups, counters: new Map(Object.entries(parsed.counters) as Array<[CounterName, number]>), expireBefore: parsed.expireBefore, settled: [] };
}

/** A batch written by the normal batch path (the group commit's writer). */
type Apply = (batch: WriteBatch) => Promise<void> | void;

/** Held in memory, for a database that lives there too. */
export function memoryHeldBatches(apply: Apply): HeldBatches {
  const held: WriteBatch[] = [];
  return {
    async hold(batch) {
      held.push(batch);
    },
    async any() {
      return held.length > 0;
    },
    async release(signal) {
      while (held.length > 0 && !signal.aborted) {
        await apply(held[0]!);
        held.shift();
      }
    },
  };
}

/**
 * Held in the file `path`, one line per batch: its id, a tab, its body (batchBody). A line
 * without its newline is the end of a write the process died in: it is cut off before the
 * next line is added, and never applied (the batch was not held yet).
 */
export function fileHeldBatches(path: string, apply: Apply): HeldBatches {
  let file: FileHandle | null = null;
  /** Bytes of the file applied by this process's releases so far. */
  let applied = 0;
  const appending = async (): Promise<FileHandle> => {
    if (file) return file;
    const handle = await open(path, 'a+');
    const { size } = await handle.stat();
    if (size > 0) {
      const text = await readFile(path, 'utf8');
      const whole = Buffer.byteLength(text.slice(0, text.lastIndexOf('\n') + 1));
      if (whole < size) await handle.truncate(whole);
    }
    file = handle;
    return handle;
  };
  return {
    async hold(batch) {
      const handle = await appending();
      await handle.write(`${batch.id}\t${batchBody(batch)}\n`);
    },
    async any() {
      return (await stat(path).catch(() => null))?.size ? true : false;
    },
    async release(signal) {
      const text = await readFile(path).catch(() => Buffer.alloc(0));
      // From where a release of this process that failed midway got to.
      for (let end = text.indexOf(10, applied); end >= 0 && !signal.aborted; end = text.indexOf(10, applied)) {
        const line = text.toString('utf8', applied, end);
        const tab = line.indexOf('\t');
        await apply(heldBatch(line.slice(0, tab), line.slice(tab + 1)));
        applied = end + 1;
      }
      if (signal.aborted) return;
      await file?.close();
      file = null;
      applied = 0;
      await rm(path, { force: true });
    },
  };
}

/**
 * Held in PostgreSQL's `held_batches`, made (if missing) by `prepare()` before anything is
 * held. `apply` runs a batch inside the transaction that deletes it.
 */
export function postgresHeldBatches(db: Kysely<Database>, apply: (trx: Transaction<Database>, batch: WriteBatch) => Promise<void>): HeldBatches {
  return {
    async prepare() {
      await sql`CREATE TABLE IF NOT EXISTS held_batches (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text NOT NULL UNIQUE, held_at bigint NOT NULL, body text NOT NULL)`
        .execute(db)
        // Two instances starting at once: one made it (its row type, its table or its sequence)
        // while the other looked.
        .catch((error: unknown) => {
          if (!['23505', '42P07', '42710'].includes(String((error as { code?: unknown }).code))) throw error;
        });
    },
    async hold(batch) {
      await sql`INSERT INTO held_batches (id, held_at, body) VALUES (${batch.id}, ${Date.now()}, ${batchBody(batch)}) ON CONFLICT (id) DO NOTHING`.execute(db);
    },
    async any() {
      const { rows } = await sql`SELECT 1 FROM held_batches LIMIT 1`.execute(db);
      return rows.length > 0;
    },
    async release(signal) {
      // Another instance applying the oldest at the same time: this one takes the next.
      const next = (trx: Transaction<Database>) =>
        sql<{ seq: string; id: string; body: string }>`SELECT seq, id, body FROM held_batches ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED`.execute(trx);
      for (let more = true; more && !signal.aborted; ) {
        more = await db.transaction().execute(async (trx) => {
          const row = (await next(trx)).rows[0];
          if (!row) return false;
          await apply(trx, heldBatch(row.id, row.body));
          await sql`DELETE FROM held_batches WHERE seq = ${row.seq}`.execute(trx);
          return true;
        });
      }
    },
  };
}
