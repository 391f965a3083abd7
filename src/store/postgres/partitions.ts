/**
 * The history tables on PostgreSQL are partitioned by day (declarative range partitioning):
 * `checks` on `checked_at` (ms), `check_hours` on `hour` (hours since the epoch), each with a
 * partition per UTC day named `<table>_pYYYYMMDD` and a default partition for rows outside
 * every day made so far (a check from a clock far off, a catch-up of old rows).
 *
 * Maintenance makes the partitions of yesterday to the day after tomorrow ahead of time,
 * moving any rows the default partition holds for such a day into it, and retention drops a
 * whole day's partition once all of it is older than the cutoff: no row-by-row deletes, no
 * vacuum debt. DDL waits at most a short lock timeout, so it never queues requests behind it
 * for long; what it could not do is done on the next pass.
 */
import { sql, type Kysely } from 'kysely';
import type { Maintenance, Removed, RetentionCutoffs } from '../maintenance.js';
import type { Database } from '../schema.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Days made ahead of today, and behind it. */
const DAYS_AHEAD = 2;
const DAYS_BEHIND = 1;
/** Longest DDL waits for a lock before it gives up until the next pass. */
const LOCK_TIMEOUT = '500ms';
/** PostgreSQL's SQLSTATE for a lock timeout. */
const LOCK_NOT_AVAILABLE = '55P03';
/** Servers forgotten per statement. */
const SERVERS_PER_DELETE = 1_000;

/** A partitioned history table: its partition key and how many key units a day spans. */
interface PartitionedTable {
  name: 'checks' | 'check_hours';
  column: 'checked_at' | 'hour';
  perDay: number;
}
export const PARTITIONED: readonly PartitionedTable[] = [
  { name: 'checks', column: 'checked_at', perDay: DAY_MS },
  { name: 'check_hours', column: 'hour', perDay: 24 },
];

/** `YYYYMMDD` of a day (days since the epoch). */
function dayName(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10).replaceAll('-', '');
}

function dayOf(name: string): number | null {
  const match = /_p(\d{4})(\d{2})(\d{2})$/.exec(name);
  return match ? Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])) / DAY_MS : null;
}

/** The days that have a partition of `table`. */
async function partitionDays<DB>(db: Kysely<DB>, table: PartitionedTable): Promise<Map<number, string>> {
  const { rows } = await sql<{ name: string }>`
    SELECT c.relname AS name FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
    WHERE p.relname = ${table.name} AND p.relnamespace = current_schema()::regnamespace`.execute(db);
  const days = new Map<number, string>();
  for (const { name } of rows) {
    const day = dayOf(name);
    if (day !== null) days.set(day, name);
  }
  return days;
}

/** Makes the partition of `day`, with the rows the default partition holds for it. */
export async function createDayPartition<DB>(db: Kysely<DB>, table: PartitionedTable, day: number): Promise<void> {
  const name = sql.id(`${table.name}_p${dayName(day)}`);
  const parent = sql.id(table.name);
  const fallback = sql.id(`${table.name}_default`);
  const column = sql.id(table.column);
  const from = sql.lit(day * table.perDay);
  const to = sql.lit((day + 1) * table.perDay);
  await inTransaction(db, async (trx) => {
    await sql`CREATE TABLE ${name} (LIKE ${parent} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`.execute(trx);
    await sql`WITH moved AS (DELETE FROM ${fallback} WHERE ${column} >= ${from} AND ${column} < ${to} RETURNING *)
      INSERT INTO ${name} SELECT * FROM moved`.execute(trx);
    await sql`ALTER TABLE ${parent} ATTACH PARTITION ${name} FOR VALUES FROM (${from}) TO (${to})`.execute(trx);
  });
}

/** Runs DDL in a transaction of its own with the lock timeout, or in the one `db` is (a migration's). */
async function inTransaction<DB>(db: Kysely<DB>, work: (trx: Kysely<DB>) => Promise<void>): Promise<void> {
  if (db.isTransaction) return work(db);
  await db.transaction().execute(async (trx) => {
    await sql`SET LOCAL lock_timeout = ${sql.lit(LOCK_TIMEOUT)}`.execute(trx);
    await work(trx);
  });
}

/** Partitions from the first to the last day given (days since the epoch), those missing. */
export async function ensureDayPartitions<DB>(db: Kysely<DB>, firstDay: number, lastDay: number): Promise<void> {
  for (const table of PARTITIONED) {
    const have = await partitionDays(db, table);
    for (let day = firstDay; day <= lastDay; day++) {
      if (!have.has(day)) await createDayPartition(db, table, day);
    }
  }
}

/** Drops the day partitions wholly before the cutoffs, and deletes the default partitions' rows before them; returns how many it dropped. */
async function dropOldPartitions<DB>(db: Kysely<DB>, cutoffs: RetentionCutoffs): Promise<number> {
  let dropped = 0;
  for (const table of PARTITIONED) {
    const cutoff = table.name === 'checks' ? cutoffs.checksBefore : cutoffs.hoursBefore;
    for (const [day, name] of await partitionDays(db, table)) {
      if ((day + 1) * table.perDay > cutoff) continue;
      try {
        await inTransaction(db, (trx) => sql`DROP TABLE ${sql.id(name)}`.execute(trx).then(() => {}));
        dropped += 1;
      } catch (error) {
        // A long query held the table past the lock timeout: the next pass drops it.
        if ((error as { code?: unknown }).code !== LOCK_NOT_AVAILABLE) throw error;
      }
    }
    await sql`DELETE FROM ${sql.id(`${table.name}_default`)} WHERE ${sql.id(table.column)} < ${cutoff}`.execute(db);
  }
  return dropped;
}

export function postgresMaintenance(db: Kysely<Database>): Maintenance {
  return {
    async run(cutoffs: RetentionCutoffs, now: number, signal: AbortSignal): Promise<Removed> {
      const today = Math.floor(now / DAY_MS);
      await ensureDayPartitions(db, today - DAYS_BEHIND, today + DAYS_AHEAD);
      const removed = { partitions: await dropOldPartitions(db, cutoffs), servers: 0 };
      while (!signal.aborted) {
        const result = await db
          .deleteFrom('servers')
          .where('sid', 'in', (eb) => eb.selectFrom('servers').select('sid').where('last_seen', '<', cutoffs.serversBefore).limit(SERVERS_PER_DELETE))
          .executeTakeFirst();
        removed.servers += Number(result.numDeletedRows);
        if (Number(result.numDeletedRows) < SERVERS_PER_DELETE) break;
      }
      return removed;
    },
  };
}
