/**
 * The history tables on PostgreSQL are partitioned by time (declarative range partitioning):
 * `checks` on `checked_at` (ms) by UTC day, `check_hours` and `check_four_hours` on `hour`
 * (hours since the epoch) by ISO week (Monday to Monday, UTC), so a 7- or 30-day history reads
 * two or six partitions, not 8 or 31.
 * Each partition is named `<table>_pYYYYMMDD` after its first day; a default partition holds
 * rows outside every partition made so far (a check from a clock far off, a catch-up of old
 * rows).
 *
 * Maintenance makes the partitions of yesterday to the day after tomorrow ahead of time,
 * moving any rows the default partition holds for them, and retention drops a whole partition
 * once all of it is older than the cutoff: no row-by-row deletes, no vacuum debt. So hourly
 * rows are kept `ROLLUP_RETENTION_DAYS` and at most a week more. A partition's range is read
 * from the catalog, not its name, so partitions of another span (a database partitioned by day
 * throughout) are kept, dropped and filled around in the same way. DDL waits at most a short
 * lock timeout, so it never queues requests behind it for long; what it could not do is done
 * on the next pass.
 *
 * Several instances share one database: a pass runs only while its instance holds an advisory
 * lock (an instance that finds it taken leaves the pass to the holder), and DDL that loses a
 * race anyway (an instance without the lock, or the migration's partitions) is checked against
 * the catalog afterwards: a partition another instance made or dropped first is what was wanted.
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
/**
 * What DDL racing another session's raises: the table exists (42P07; its row type 42710, or
 * 23505 on the catalog's unique indexes when both create it at once), it overlaps a partition
 * attached meanwhile (42P17), it is attached already (42809), it is gone (42P01).
 */
const LOST_RACE = new Set(['42P07', '42710', '23505', '42P17', '42809', '42P01']);
/** The advisory lock key of a maintenance pass ('observ' in ASCII), the same on every instance. */
const PASS_LOCK = 0x6f6273657276;
/** Servers forgotten per statement. */
const SERVERS_PER_DELETE = 1_000;
/** 1970-01-05, the first Monday since the epoch (days): spans start at it (a week: on Mondays). */
const FIRST_MONDAY = 4;

export type PartitionedName = 'checks' | 'check_hours' | 'check_four_hours';

/** A partitioned history table: its partition key, its key units per day, and the days a partition spans. */
interface PartitionedTable {
  name: PartitionedName;
  column: 'checked_at' | 'hour';
  perDay: number;
  spanDays: number;
}
const PARTITIONED: readonly PartitionedTable[] = [
  { name: 'checks', column: 'checked_at', perDay: DAY_MS, spanDays: 1 },
  { name: 'check_hours', column: 'hour', perDay: 24, spanDays: 7 },
  { name: 'check_four_hours', column: 'hour', perDay: 24, spanDays: 7 },
];

/** The first day of `table`'s span that holds `day`. */
function spanStart(table: PartitionedTable, day: number): number {
  return day - ((((day - FIRST_MONDAY) % table.spanDays) + table.spanDays) % table.spanDays);
}

/** `YYYYMMDD` of a day (days since the epoch). */
function dayName(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10).replaceAll('-', '');
}

interface Partition {
  name: string;
  /** Its range of the partition key: from, inclusive, to, exclusive. */
  from: number;
  to: number;
}

/** The partitions of `table` but the default one. */
async function partitionsOf<DB>(db: Kysely<DB>, table: PartitionedTable): Promise<Partition[]> {
  const { rows } = await sql<{ name: string; bound: string }>`
    SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
    WHERE p.relname = ${table.name} AND p.relnamespace = current_schema()::regnamespace`.execute(db);
  const partitions: Partition[] = [];
  for (const { name, bound } of rows) {
    const match = /FROM \('?(-?\d+)'?\) TO \('?(-?\d+)'?\)/.exec(bound);
    if (match) partitions.push({ name, from: Number(match[1]), to: Number(match[2]) });
  }
  return partitions;
}

/** Makes the partition of `table` for the whole days `firstDay` up to `endDay`, with the rows the default partition holds for them. */
async function createPartition<DB>(db: Kysely<DB>, table: PartitionedTable, firstDay: number, endDay: number): Promise<void> {
  const name = sql.id(`${table.name}_p${dayName(firstDay)}`);
  const parent = sql.id(table.name);
  const fallback = sql.id(`${table.name}_default`);
  const column = sql.id(table.column);
  const from = sql.lit(firstDay * table.perDay);
  const to = sql.lit(endDay * table.perDay);
  await inTransaction(db, async (trx) => {
    await sql`CREATE TABLE IF NOT EXISTS ${name} (LIKE ${parent} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`.execute(trx);
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

/**
 * Partitions for every day from `firstDay` to `lastDay` (days since the epoch) of the tables
 * named (by default all), each the span of its table; where existing partitions cover part of
 * a span, the rest of it.
 */
export async function ensurePartitions<DB>(
  db: Kysely<DB>,
  firstDay: number,
  lastDay: number,
  names: readonly PartitionedName[] = PARTITIONED.map((table) => table.name),
): Promise<void> {
  for (const table of PARTITIONED.filter((t) => names.includes(t.name))) {
    const have = await partitionsOf(db, table);
    const covered = (day: number) => have.some((p) => p.from <= day * table.perDay && day * table.perDay < p.to);
    const end = spanStart(table, lastDay) + table.spanDays;
    let day = spanStart(table, firstDay);
    while (day < end) {
      if (covered(day)) {
        day++;
        continue;
      }
      // A gap ends at the next covered day or at the end of its span.
      const spanEnd = spanStart(table, day) + table.spanDays;
      let gapEnd = day + 1;
      while (gapEnd < spanEnd && !covered(gapEnd)) gapEnd++;
      try {
        await createPartition(db, table, day, gapEnd);
        have.push({ name: '', from: day * table.perDay, to: gapEnd * table.perDay });
      } catch (error) {
        const code = sqlState(error);
        if (db.isTransaction || (code !== LOCK_NOT_AVAILABLE && !LOST_RACE.has(code))) throw error;
        // Another session made a partition here first: fine if the days are covered now. A
        // lock not had in time: the next pass makes it.
        have.splice(0, have.length, ...(await partitionsOf(db, table)));
        if (!covered(day) && code !== LOCK_NOT_AVAILABLE) throw error;
      }
      day = gapEnd;
    }
  }
}

/** Drops the partitions wholly before the cutoffs, and deletes the default partitions' rows before them; returns how many it dropped. */
async function dropOldPartitions<DB>(db: Kysely<DB>, cutoffs: RetentionCutoffs): Promise<number> {
  let dropped = 0;
  for (const table of PARTITIONED) {
    const cutoff = table.name === 'checks' ? cutoffs.checksBefore : cutoffs.hoursBefore;
    for (const partition of await partitionsOf(db, table)) {
      if (partition.to > cutoff) continue;
      try {
        await inTransaction(db, (trx) => sql`DROP TABLE IF EXISTS ${sql.id(partition.name)}`.execute(trx).then(() => {}));
        dropped += 1;
      } catch (error) {
        // A long query held the table past the lock timeout: the next pass drops it. Another
        // session dropped it first: gone, as wanted.
        const code = sqlState(error);
        if (code !== LOCK_NOT_AVAILABLE && code !== '42P01') throw error;
      }
    }
    await sql`DELETE FROM ${sql.id(`${table.name}_default`)} WHERE ${sql.id(table.column)} < ${cutoff}`.execute(db);
  }
  return dropped;
}

function sqlState(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

/**
 * Runs `pass` on one connection while it holds the pass's advisory lock; null when another
 * session holds it (its pass does the same work). A session lock, so the pass's transactions
 * run inside it; it goes with the connection if that breaks.
 */
async function whileLocked<T>(db: Kysely<Database>, pass: (conn: Kysely<Database>) => Promise<T>): Promise<T | null> {
  return db.connection().execute(async (conn) => {
    const { rows } = await sql<{ locked: boolean }>`SELECT pg_try_advisory_lock(${PASS_LOCK}) AS locked`.execute(conn);
    if (!rows[0]?.locked) return null;
    try {
      return await pass(conn);
    } finally {
      await sql`SELECT pg_advisory_unlock(${PASS_LOCK})`.execute(conn);
    }
  });
}

export function postgresMaintenance(db: Kysely<Database>): Maintenance {
  return {
    async run(cutoffs: RetentionCutoffs, now: number, signal: AbortSignal): Promise<Removed> {
      // Another instance's pass is running: it does the same work.
      const removed = await whileLocked(db, (conn) => maintain(conn, cutoffs, now, signal));
      return removed ?? { skipped: 1 };
    },
  };
}

/** One pass: partitions ahead, then partitions and servers past retention. */
async function maintain(db: Kysely<Database>, cutoffs: RetentionCutoffs, now: number, signal: AbortSignal): Promise<Removed> {
  const today = Math.floor(now / DAY_MS);
  await ensurePartitions(db, today - DAYS_BEHIND, today + DAYS_AHEAD);
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
}
