/**
 * Several instances on one PostgreSQL database (a rolling deploy): their first retention passes
 * run at once, and partition DDL that races another session's (an instance without the pass's
 * lock, or the same days made twice) ends with the partitions wanted, not with an error.
 */
import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';
import { afterAll, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { ensurePartitions } from '../../src/store/postgres/partitions.js';
import { FakeClock } from '../support/clock.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres-databases.js';

const DAY = 24 * 3_600_000;
/** A Monday long before the partitions the migration makes for the real today. */
const T0 = Date.parse('2025-03-10T12:00:00.000Z');
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10).replaceAll('-', '');

const databases: TestDatabase[] = [];
afterAll(async () => {
  for (const database of databases) await database.drop();
});

/** The partitions of `table` but the default one and those the migration made around the real today: name → [from, to). */
async function partitionRanges(url: string, table: string): Promise<Array<[string, number, number]>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_inherits i
       JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
       WHERE p.relname = $1 AND c.relname < $2 AND c.relname <> $3 ORDER BY 1`,
      [table, `${table}_p${day(T0 + 60 * DAY)}`, `${table}_default`],
    );
    return rows.map((r) => {
      const [, from, to] = /FROM \('?(-?\d+)'?\) TO \('?(-?\d+)'?\)/.exec(r.bound as string)!;
      return [r.name as string, Number(from), Number(to)];
    });
  } finally {
    await client.end();
  }
}

/** The partitions of the raw checks, a day each, as [first day's name, from, to]. */
const dayPartition = (ms: number): [string, number, number] => {
  const start = Math.floor(ms / DAY) * DAY;
  return [`checks_p${day(start)}`, start, start + DAY];
};

it("runs two instances' first passes at once without an error, and leaves each day in one partition", async () => {
  const database = await createTestDatabase('observer_race');
  databases.push(database);
  const config = { database: { kind: 'postgres' as const, url: database.url }, checkRetentionDays: 2, rollupRetentionDays: 3 };
  const errors: unknown[] = [];
  const options = { onError: (error: unknown) => errors.push(error), pruneDelayMs: 3_600_000 };
  const clocks = [new FakeClock(T0), new FakeClock(T0)];
  const stores = await Promise.all(clocks.map((clock) => openStore(config, clock, options)));
  try {
    await Promise.all(stores.map((store) => store.prune()));
    expect(await partitionRanges(database.url, 'checks')).toEqual([-1, 0, 1, 2].map((offset) => dayPartition(T0 + offset * DAY)));
    // Last week (yesterday, a Sunday, is in it) and this week, a week each.
    const monday = (T0 - 12 * 3_600_000) / 3_600_000;
    expect(await partitionRanges(database.url, 'check_hours')).toEqual([
      [`check_hours_p${day(T0 - 7 * DAY)}`, monday - 7 * 24, monday],
      [`check_hours_p${day(T0)}`, monday, monday + 7 * 24],
    ]);

    // Three days on, both pass again at once: the days wholly past retention (two days) are dropped
    // once, the next ones made once.
    for (const clock of clocks) clock.advance(3 * DAY);
    await Promise.all(stores.map((store) => store.prune()));
    expect(await partitionRanges(database.url, 'checks')).toEqual([1, 2, 3, 4, 5].map((offset) => dayPartition(T0 + offset * DAY)));
    expect(errors).toEqual([]);
  } finally {
    await Promise.all(stores.map((store) => store.close()));
  }
});

it('makes the same partitions from two sessions at once without the pass lock: no error, and each day made once', async () => {
  const database = await createTestDatabase('observer_race');
  databases.push(database);
  const store = await openStore({ database: { kind: 'postgres', url: database.url }, checkRetentionDays: 2 }, new FakeClock(T0), { pruneDelayMs: 3_600_000 });
  await store.close();
  const sessions = [0, 1].map(() => new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: database.url, max: 1 }) }) }));
  try {
    const first = Math.floor(T0 / DAY);
    // Several rounds, each over days no one has made yet, so the two sessions' DDL meets.
    for (let round = 0; round < 6; round++) {
      const from = first + round * 10;
      await Promise.all(sessions.map((db) => ensurePartitions(db, from, from + 8)));
      // Two sessions waiting on each other's new tables both give up at the lock timeout,
      // leaving those days to the next pass: one more makes them.
      await ensurePartitions(sessions[0]!, from, from + 8);
    }
    // Every day made once, by one session or the other, and nothing between the rounds.
    const wanted = [];
    for (let round = 0; round < 6; round++) for (let d = 0; d <= 8; d++) wanted.push(dayPartition((first + round * 10 + d) * DAY));
    expect(await partitionRanges(database.url, 'checks')).toEqual(wanted);
  } finally {
    for (const db of sessions) await db.destroy();
  }
});
