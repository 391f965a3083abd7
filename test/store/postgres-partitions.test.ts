/**
 * On PostgreSQL the history tables are partitioned by day: retention makes the days ahead,
 * moves rows that arrived before their day's partition out of the default partition, and drops
 * whole days past retention instead of deleting their rows.
 */
import pg from 'pg';
import { randomUUID } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { FakeClock } from '../support/clock.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres-databases.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** A day long before the partitions the migration makes for the real today. */
const T0 = Date.parse('2025-03-10T12:00:00.000Z');
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10).replaceAll('-', '');

const databases: TestDatabase[] = [];
afterAll(async () => {
  for (const database of databases) await database.drop();
});

it('makes the days ahead, moves early rows out of the default partition, and drops whole days past retention', async () => {
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
  const partitions = async (table: string) =>
    (
      await client.query(
        `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = $1 ORDER BY 1`,
        [table],
      )
    ).rows.map((r) => r.relname as string);
  const check = (at: number) => ({ serverId: randomUUID(), edition: 'java' as const, host: 'mc.example.com', port: 25565, checkedAt: at, online: true, playersOnline: 3, playersMax: 9, latencyMs: 4 });
  try {
    for (const at of [T0 - 3 * DAY - HOUR, T0 - DAY, T0]) store.recordCheck(check(at));
    await store.flush();
    // No partition for these days yet: all three wait in the default partitions.
    expect(await rowsByPartition('checks')).toEqual({ checks_default: 3 });

    await store.prune();
    // Yesterday to the day after tomorrow now have partitions; the two rows of those days
    // moved into them, the one past retention was deleted.
    for (const offset of [-1, 0, 1, 2]) expect(await partitions('checks')).toContain(`checks_p${day(T0 + offset * DAY)}`);
    expect(await rowsByPartition('checks')).toEqual({ [`checks_p${day(T0 - DAY)}`]: 1, [`checks_p${day(T0)}`]: 1 });
    expect(await rowsByPartition('check_hours')).toEqual({ [`check_hours_p${day(T0 - DAY)}`]: 1, [`check_hours_p${day(T0)}`]: 1 });

    // Three days on, the days past retention are dropped whole, and their rows with them.
    clock.advance(3 * DAY);
    store.recordCheck(check(clock.now()));
    await store.flush();
    await store.prune();
    expect(await partitions('checks')).not.toContain(`checks_p${day(T0 - DAY)}`);
    expect(await partitions('checks')).not.toContain(`checks_p${day(T0)}`);
    expect(await rowsByPartition('checks')).toEqual({ [`checks_p${day(clock.now())}`]: 1 });
    expect(await partitions('check_hours')).not.toContain(`check_hours_p${day(T0 - DAY)}`);
    expect(await rowsByPartition('check_hours')).toEqual({ [`check_hours_p${day(T0)}`]: 1, [`check_hours_p${day(clock.now())}`]: 1 });
  } finally {
    await client.end();
    await store.close();
  }
});
