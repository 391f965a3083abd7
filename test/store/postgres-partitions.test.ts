/**
 * On PostgreSQL the raw checks are partitioned by day and the hourly and four-hour rows by week: retention
 * makes the partitions ahead, moves rows that arrived before their partition out of the
 * default partition, and drops whole partitions past retention instead of deleting their rows.
 */
import pg from 'pg';
import { randomUUID } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { FakeClock } from '../support/clock.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres-databases.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** A Monday long before the partitions the migration makes for the real today. */
const T0 = Date.parse('2025-03-10T12:00:00.000Z');
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10).replaceAll('-', '');
/** The Monday starting the week of `ms` (UTC). */
const week = (ms: number) => day(ms - ((new Date(ms).getUTCDay() + 6) % 7) * DAY);

const databases: TestDatabase[] = [];
afterAll(async () => {
  for (const database of databases) await database.drop();
});

it('makes the days and weeks ahead, moves early rows out of the default partition, and drops whole partitions past retention', async () => {
  const database = await createTestDatabase('observer_partitions');
  databases.push(database);
  const clock = new FakeClock(T0);
  const store = await openStore({ database: { kind: 'postgres', url: database.url }, checkRetentionDays: 2, rollupRetentionDays: 3 }, clock);
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  /** Rows per partition of a table, by partition name. */
  const rowsByPartition = async (table: string) =>
    Object.fromEntries(
      (await client.query(`SELECT tableoid::regclass::text AS part, count(*)::int AS n FROM ${table} GROUP BY 1 ORDER BY 1`)).rows.map((r) => [r.part, r.n]),
    );
  /** The partitions of a table but those the migration made around the real today. */
  const partitions = async (table: string) =>
    (
      await client.query(
        `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = $1 AND c.relname < $2 ORDER BY 1`,
        [table, `${table}_p${day(T0 + 60 * DAY)}`],
      )
    ).rows.map((r) => r.relname as string);
  const check = (at: number) => ({ serverId: randomUUID(), edition: 'java' as const, host: 'mc.example.com', port: 25565, checkedAt: at, online: true, playersOnline: 3, playersMax: 9, latencyMs: 4 });
  try {
    for (const at of [T0 - 3 * DAY - HOUR, T0 - DAY, T0]) store.recordCheck(check(at));
    await store.flush();
    // No partition for these days yet: all three wait in the default partitions.
    expect(await rowsByPartition('checks')).toEqual({ checks_default: 3 });

    await store.prune();
    // Yesterday to the day after tomorrow now have partitions (raw checks a day each, hourly
    // rows the weeks that hold them: yesterday, a Sunday, is in last week); the two rows of
    // those days moved into them, the one past retention was deleted.
    for (const offset of [-1, 0, 1, 2]) expect(await partitions('checks')).toContain(`checks_p${day(T0 + offset * DAY)}`);
    expect(await partitions('check_hours')).toEqual(['check_hours_default', `check_hours_p${week(T0 - DAY)}`, `check_hours_p${day(T0)}`]);
    expect(week(T0 - DAY)).toBe(day(T0 - 7 * DAY));
    expect(await rowsByPartition('checks')).toEqual({ [`checks_p${day(T0 - DAY)}`]: 1, [`checks_p${day(T0)}`]: 1 });
    // The hourly row of the check past retention is in last week's partition, kept until all
    // of that week is past retention.
    expect(await rowsByPartition('check_hours')).toEqual({ [`check_hours_p${week(T0 - DAY)}`]: 2, [`check_hours_p${day(T0)}`]: 1 });
    // Four-hour rows the same way, a row for each four hours that had a check.
    expect(await partitions('check_four_hours')).toEqual(['check_four_hours_default', `check_four_hours_p${week(T0 - DAY)}`, `check_four_hours_p${day(T0)}`]);
    expect(await rowsByPartition('check_four_hours')).toEqual({ [`check_four_hours_p${week(T0 - DAY)}`]: 2, [`check_four_hours_p${day(T0)}`]: 1 });

    // Three days on, the days and the week past retention are dropped whole, and their rows
    // with them; this week's hourly rows stay until all of the week is past retention.
    clock.advance(3 * DAY);
    store.recordCheck(check(clock.now()));
    await store.flush();
    await store.prune();
    expect(await partitions('checks')).not.toContain(`checks_p${day(T0 - DAY)}`);
    expect(await partitions('checks')).not.toContain(`checks_p${day(T0)}`);
    expect(await rowsByPartition('checks')).toEqual({ [`checks_p${day(clock.now())}`]: 1 });
    expect(await partitions('check_hours')).toEqual(['check_hours_default', `check_hours_p${day(T0)}`]);
    expect(await rowsByPartition('check_hours')).toEqual({ [`check_hours_p${day(T0)}`]: 2 });
    expect(await partitions('check_four_hours')).toEqual(['check_four_hours_default', `check_four_hours_p${day(T0)}`]);
    expect(await rowsByPartition('check_four_hours')).toEqual({ [`check_four_hours_p${day(T0)}`]: 2 });
  } finally {
    await client.end();
    await store.close();
  }
});

it('keeps, fills around and drops the day partitions of hourly rows a database partitioned by day throughout already has', async () => {
  const database = await createTestDatabase('observer_partitions');
  databases.push(database);
  const clock = new FakeClock(T0);
  // The migration makes the partitions around the real today; at T0 there are none yet.
  const first = await openStore({ database: { kind: 'postgres', url: database.url }, checkRetentionDays: 2 }, clock);
  await first.close();
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  const hourPartitions = async () =>
    (
      await client.query(
        `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_inherits i
         JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
         WHERE p.relname = 'check_hours' AND c.relname <> 'check_hours_default' AND c.relname <= $1 ORDER BY 1`,
        [`check_hours_p${day(T0 + 30 * DAY)}`],
      )
    ).rows.map((r) => `${r.name} ${r.bound}`);
  const hours = (ms: number) => Math.floor(ms / HOUR);
  const range = (from: number, to: number) => `FOR VALUES FROM (${hours(from)}) TO (${hours(to)})`;
  const midnight = T0 - 12 * HOUR;
  // Wednesday and Thursday of this week by day, as an earlier Observer made them.
  for (const offset of [2, 3]) {
    const from = midnight + offset * DAY;
    await client.query(`CREATE TABLE check_hours_p${day(from)} PARTITION OF check_hours FOR VALUES FROM (${hours(from)}) TO (${hours(from + DAY)})`);
  }
  const store = await openStore({ database: { kind: 'postgres', url: database.url }, checkRetentionDays: 2, rollupRetentionDays: 30 }, clock);
  try {
    await store.prune();
    // Last week whole, then this week around the two days: Monday and Tuesday, the two days, the rest.
    expect(await hourPartitions()).toEqual([
      `check_hours_p${day(midnight - 7 * DAY)} ${range(midnight - 7 * DAY, midnight)}`,
      `check_hours_p${day(midnight)} ${range(midnight, midnight + 2 * DAY)}`,
      `check_hours_p${day(midnight + 2 * DAY)} ${range(midnight + 2 * DAY, midnight + 3 * DAY)}`,
      `check_hours_p${day(midnight + 3 * DAY)} ${range(midnight + 3 * DAY, midnight + 4 * DAY)}`,
      `check_hours_p${day(midnight + 4 * DAY)} ${range(midnight + 4 * DAY, midnight + 7 * DAY)}`,
    ]);
    // Each partition holds its rows: a 30-day history at the end of the week reads them all.
    clock.advance(6 * DAY);
    const id = randomUUID();
    for (const offset of [1, 2, 3, 5]) {
      store.recordCheck({ serverId: id, edition: 'java', host: 'mc.example.com', port: 25565, checkedAt: midnight + offset * DAY + HOUR, online: true, playersOnline: 3, playersMax: 9, latencyMs: 4 });
    }
    await store.flush();
    expect((await store.history(id, '30d'))?.checks).toBe(4);
    // A month on, every partition of these weeks is past retention and gone, the day ones with them.
    clock.advance(35 * DAY);
    await store.prune();
    expect(await hourPartitions()).toEqual([]);
  } finally {
    await client.end();
    await store.close();
  }
});
