/**
 * Two instances writing batches to one PostgreSQL lock server rows in one order, whatever
 * order their checks arrived in: the interleaving that deadlocks (40P01) when each locks in
 * arrival order is built by hand, with a third connection holding the first row and
 * pg_stat_activity showing who waits, so nothing depends on timing.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { createPostgresBatchWriter } from '../../src/store/postgres/batch-writer.js';
import { createPostgresPool } from '../../src/store/postgres/pool.js';
import type { Database } from '../../src/store/schema.js';
import type { CheckRecord } from '../../src/store/types.js';
import type { WriteBatch } from '../../src/store/history/write-queue.js';
import { POSTGRES_URL } from '../support/services.js';

const name = `observer_test_${randomBytes(6).toString('hex')}`;
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  cleanups.push(() => client.end());
  return client;
}

function batch(ids: string[], checkedAt: number): WriteBatch {
  const check = (serverId: string): CheckRecord => ({
    serverId, edition: 'java', host: `${serverId.slice(0, 4)}.example`, port: 25565, checkedAt,
    online: true, playersOnline: 1, playersMax: 10, latencyMs: 5,
  });
  return { id: randomUUID(), checks: ids.map(check), counters: new Map(), lookups: [], expireBefore: null, settled: [] };
}

it('two batches with the same servers in opposite orders do not deadlock', async () => {
  const admin = await connect(POSTGRES_URL);
  await admin.query(`CREATE DATABASE ${name}`);
  cleanups.push(() => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  const store = await openStore({ database: { kind: 'postgres', url: url.toString() }, checkRetentionDays: 30 });
  await store.close();
  const [dbA, dbB] = [0, 1].map(() => new Kysely<Database>({ dialect: new PostgresDialect({ pool: createPostgresPool(url.toString(), () => {}) }) }));
  cleanups.push(() => dbA!.destroy(), () => dbB!.destroy());
  const [writeA, writeB] = [createPostgresBatchWriter(dbA!), createPostgresBatchWriter(dbB!)];
  const x = '00000000-0000-5000-8000-00000000000a';
  const y = '00000000-0000-5000-8000-00000000000b';
  await writeA(batch([x, y], 1_000));

  const blocker = await connect(url.toString());
  const watcher = await connect(url.toString());
  const waiting = async () =>
    Number((await watcher.query(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'`, [name])).rows[0].n);
  const waitFor = async (n: number) => {
    for (let i = 0; i < 500 && (await waiting()) < n; i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await waiting()).toBe(n);
  };
  await blocker.query('BEGIN');
  await blocker.query('SELECT id FROM servers WHERE id = $1 FOR UPDATE', [x]);
  // A waits for x. B, with its checks in the other order, must not take y before x.
  const a = Promise.resolve(writeA(batch([x, y], 2_000))).then(() => 'ok', (error: { code?: string }) => error.code ?? String(error));
  await waitFor(1);
  const b = Promise.resolve(writeB(batch([y, x], 3_000))).then(() => 'ok', (error: { code?: string }) => error.code ?? String(error));
  await waitFor(2);
  await blocker.query('COMMIT');
  expect(await Promise.all([a, b])).toEqual(['ok', 'ok']);
});
