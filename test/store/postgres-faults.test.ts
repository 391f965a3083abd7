/**
 * PostgreSQL that refuses writes while it keeps answering reads: made read-only, or out of
 * disk space. Either costs what an outage costs: checks are buffered (health says `down`),
 * trends and statistics are still read, and once writes succeed again every buffered check
 * is written, none twice.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, expect, it, vi } from 'vitest';
import { openStore, type HistoryStore } from '../../src/store/index.js';
import { asAdmin, createTestDatabase, type TestDatabase } from '../support/postgres-databases.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A fresh database; `settings` are applied to it before the store first connects. */
async function database(settings: string[] = []): Promise<TestDatabase> {
  const made = await createTestDatabase('observer_faults');
  cleanups.push(() => made.drop());
  await asAdmin(async (c) => {
    for (const setting of settings) await c.query(`ALTER DATABASE ${made.name} SET ${setting}`);
  });
  return made;
}

/** Applies a database setting to every session: the store's pooled ones reconnect with it. */
async function setAndReconnect(name: string, setting: string): Promise<void> {
  await asAdmin(async (c) => {
    await c.query(`ALTER DATABASE ${name} SET ${setting}`);
    await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
  });
}

function check(i: number, at: number) {
  return { serverId: randomUUID(), edition: 'java' as const, host: `s${i}.faults.example`, port: 25565, checkedAt: at, online: true, playersOnline: i % 50, playersMax: 100, latencyMs: 3 };
}

async function count(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return Number((await client.query('SELECT count(*) AS n FROM checks')).rows[0].n);
  } finally {
    await client.end();
  }
}

async function open(url: string, errors: unknown[], maxRows = 100_000): Promise<HistoryStore> {
  const store = await openStore({ database: { kind: 'postgres', url }, checkRetentionDays: 30 }, undefined, {
    onError: (error) => errors.push(error),
    writes: { retryMinMs: 50, retryMaxMs: 300, maxRows },
  });
  cleanups.push(() => store.close());
  return store;
}

it('buffers while PostgreSQL is read-only, keeps serving reads, and writes everything once it is writable again', async () => {
  const { name, url } = await database();
  const errors: unknown[] = [];
  const store = await open(url, errors);
  const now = Date.now();
  store.recordCheck(check(0, now));
  await store.flush();

  await setAndReconnect(name, 'default_transaction_read_only = on');
  for (let i = 1; i <= 50; i++) store.recordCheck(check(i, now + i));
  await vi.waitFor(() => expect(store.health()).toMatchObject({ state: 'down', buffered: 50 }), { timeout: 20_000, interval: 50 });
  expect(errors.some((e) => /read-only transaction/.test(String(e)))).toBe(true);
  // Reads go on: the ranking has the check written before.
  expect((await store.trends(50, null)).data.map((s) => s.hostname)).toContain('s0.faults.example');

  await setAndReconnect(name, 'default_transaction_read_only = off');
  await vi.waitFor(() => expect(store.health()).toMatchObject({ state: 'ok', buffered: 0, dropped: 0 }), { timeout: 30_000, interval: 100 });
  expect(await count(url)).toBe(51);
}, 90_000);

const root = process.getuid?.() === 0;

it.skipIf(!root)('buffers while its disk is full, and writes everything once there is room again', async () => {
  // A tablespace on a 2 MiB file system of its own holds the history tables.
  const mount = mkdtempSync(join(tmpdir(), 'observer-pgfull-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', mount]);
  cleanups.push(() => {
    execFileSync('umount', ['-l', mount]);
    rmSync(mount, { recursive: true, force: true });
  });
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  chownSync(mount, uid, uid);
  const space = `observer_full_${randomBytes(4).toString('hex')}`;
  await asAdmin((c) => c.query(`CREATE TABLESPACE ${space} LOCATION '${mount}'`));
  // Cleanups run last first: the database goes before its tablespace.
  cleanups.push(() => asAdmin((c) => c.query(`DROP TABLESPACE IF EXISTS ${space}`)).then(() => {}));
  const { url } = await database([`default_tablespace = ${space}`]);

  const errors: unknown[] = [];
  const store = await open(url, errors, 200_000);
  const now = Date.now();
  const total = 40_000;
  for (let i = 0; i < total; i++) store.recordCheck(check(i, now + i));
  await vi.waitFor(() => expect(errors.some((e) => /No space left on device/.test(String(e)))).toBe(true), { timeout: 60_000, interval: 100 });
  expect(store.health().state).toBe('down');
  expect(store.health().buffered).toBeGreaterThan(0);
  expect((await store.trends(1, null)).data).toHaveLength(1);

  execFileSync('mount', ['-o', 'remount,size=256m', mount]);
  await vi.waitFor(() => expect(store.health()).toMatchObject({ state: 'ok', buffered: 0, dropped: 0 }), { timeout: 60_000, interval: 200 });
  expect(await count(url)).toBe(total);
}, 120_000);
