/**
 * A store handed out before its migrations are done (as the service listens during them):
 * reads answer 503 `migrating` (history, trends and stats from the previous layout while the
 * history is copied), checks recorded meanwhile wait in the write buffer and are
 * written once the schema is current, and `migration()` tells what runs, then null.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { serverId } from '../../src/status/server-id.js';
import { MigratingError, startStore, type HistoryStore, type MigrationEvent } from '../../src/store/index.js';
import { HISTORY_RANGE_NAMES } from '../../src/store/history/uptime-history.js';
import { createTestDatabase } from '../support/postgres-databases.js';
import type { LegacyDatabase } from './legacy-layout.js';
import { buildDatabase, fixtureAddress } from './upgrade-fixture.js';

const MINUTE = 60_000;
const END = Math.floor(Date.now() / MINUTE) * MINUTE - MINUTE;

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function sqliteDatabase(): Promise<LegacyDatabase> {
  const dir = mkdtempSync(join(tmpdir(), 'observer-migrating-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  return { kind: 'sqlite', path: join(dir, 'observer.db') };
}

async function postgresDatabase(): Promise<LegacyDatabase> {
  const database = await createTestDatabase('observer_migrating');
  cleanups.push(() => database.drop());
  return { kind: 'postgres', url: database.url };
}

/** Every read a client can make of the fixture's servers, without the marks of a stale answer. */
async function reads(store: HistoryStore, ids: string[]): Promise<unknown> {
  const fresh = <T extends { stale?: true }>({ stale: _stale, ...rest }: T) => rest;
  const histories = [];
  for (const id of ids) for (const range of HISTORY_RANGE_NAMES) histories.push(fresh((await store.history(id, range))!));
  const trends = [fresh(await store.trends(2, null))];
  trends.push(fresh(await store.trends(2, (trends[0] as { nextCursor: string }).nextCursor)));
  return { histories, trends, stats: fresh(await store.stats()) };
}

describe.each([
  ['SQLite', sqliteDatabase],
  ['PostgreSQL', postgresDatabase],
])('a store while it migrates, on %s', (name, newDatabase) => {
  it('keeps the checks recorded meanwhile, and writes them once migrated', async () => {
    const database = await newDatabase();
    await buildDatabase(database, 2, { servers: 3, checksPerServer: 10, intervalMs: 5 * MINUTE, end: END });
    const events: MigrationEvent[] = [];
    const { store, migrate } = await startStore({ database, checkRetentionDays: 30 }, undefined, { onMigration: (event) => events.push(event) });
    try {
      expect(store.migration()).toEqual({ name: '0003_history_layout', progress: 0 });
      await expect(store.knowsServer('any')).rejects.toBeInstanceOf(MigratingError);
      // A server the previous layout does not hold may have been checked since: not "never checked".
      await expect(store.history('any', '24h')).rejects.toBeInstanceOf(MigratingError);
      // PostgreSQL reads the previous layout only once the copy's first transaction has set its checks aside.
      if (name === 'PostgreSQL') {
        await expect(store.trends(10, null)).rejects.toBeInstanceOf(MigratingError);
        await expect(store.stats()).rejects.toMatchObject({ code: 'migrating', statusCode: 503, headers: { 'Retry-After': expect.any(String) } });
      }

      // A look-up of a server the old layout holds, and of a new one, before the migration runs.
      const [host, port] = fixtureAddress(1).split(':') as [string, string];
      const known = serverId('java', host, Number(port));
      const fresh = serverId('java', 'new.example.com', 25565);
      for (const [id, h, p] of [[known, host, Number(port)], [fresh, 'new.example.com', 25565]] as const) {
        store.recordCheck({ serverId: id, edition: 'java', host: h, port: p, checkedAt: END + 30_000, online: true, playersOnline: 7, playersMax: 20, latencyMs: 3 });
      }
      expect(store.health().buffered).toBe(2);

      await migrate();
      expect(store.migration()).toBeNull();
      expect(events.filter((e) => e.kind === 'committed').map((e) => e.migration)).toContain('0005_four_hour_rollup');
      await store.flush();
      expect(store.health().buffered).toBe(0);
      expect((await store.history(known, '24h'))?.checks).toBe(11);
      expect((await store.history(fresh, '24h'))?.checks).toBe(1);
    } finally {
      await store.close();
    }
  });
});

/**
 * Holds PostgreSQL's copy between two of its steps: `hold()`, called as its first transaction
 * commits, takes a lock on the new checks table that the steps' inserts wait for (reads of the
 * previous layout do not touch that table), on a connection opened beforehand. `held` resolves
 * once the lock is taken.
 */
async function copyHolder(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let held: Promise<unknown> | null = null;
  return {
    hold: () => (held ??= client.query('BEGIN').then(() => client.query('LOCK TABLE checks IN SHARE MODE'))),
    held: () => held,
    release: async () => {
      await held?.catch(() => {});
      await client.query('ROLLBACK').catch(() => {});
      await client.end();
    },
  };
}

describe.each([
  ['SQLite', sqliteDatabase],
  ['PostgreSQL', postgresDatabase],
])('a store while migration 0003 copies its history, on %s', (_name, newDatabase) => {
  it('answers history, trends and stats from the previous layout, marked stale, as the current layout answers them once copied', async () => {
    const database = await newDatabase();
    await buildDatabase(database, 2, { servers: 5, checksPerServer: 300, intervalMs: 5 * MINUTE, end: END, heavyTail: true });
    // One moment for both reads: the ranges end where the clock is.
    const clock = { now: () => END + MINUTE };
    const holder = database.kind === 'postgres' ? await copyHolder(database.url) : null;
    const { store, migrate } = await startStore({ database, checkRetentionDays: 30 }, clock, {
      // PostgreSQL: steps of one check, so that the copy is still under way when the hold is taken.
      migrationRowsPerStep: holder ? 1 : 50,
      onMigration: (event) => {
        if (event.kind === 'committed' && event.migration === '0003_history_layout' && event.step === 'begin') void holder?.hold();
      },
    });
    const ids = [0, 1, 4].map((i) => {
      const [host, port] = fixtureAddress(i).split(':') as [string, string];
      return serverId('java', host, Number(port));
    });
    let migrating: Promise<void> | null = null;
    try {
      expect(store.migration()?.name).toBe('0003_history_layout');
      // SQLite reads the previous layout from the start; PostgreSQL once its first transaction
      // has set the old checks aside (503 `migrating` before).
      if (holder) {
        await expect(store.history(ids[0]!, '7d')).rejects.toBeInstanceOf(MigratingError);
        migrating = migrate();
        while (!holder.held()) await new Promise((resolve) => setTimeout(resolve, 5));
        await holder.held();
        expect(store.migration()?.name).toBe('0003_history_layout');
      }
      const history = await store.history(ids[0]!, '7d');
      expect(history).toMatchObject({ stale: true, checks: expect.any(Number) });
      expect(history!.checks).toBeGreaterThan(0);
      expect(await store.trends(2, null)).toMatchObject({ stale: true, hasNext: true });
      expect(await store.stats()).toMatchObject({ stale: true, recentChecks: expect.any(Array) });
      const before = await reads(store, ids);
      await holder?.release();

      await (migrating ?? migrate());
      expect(await store.history(ids[0]!, '7d')).not.toHaveProperty('stale');
      expect(await reads(store, ids)).toEqual(before);
    } finally {
      await holder?.release();
      await migrating?.catch(() => {});
      await store.close();
    }
  });

  it('answers every read asked up to and across the switch from one layout or the other, or 503 migrating', async () => {
    const database = await newDatabase();
    await buildDatabase(database, 2, { servers: 20, checksPerServer: 100, intervalMs: 5 * MINUTE, end: END, heavyTail: true });
    // PostgreSQL reads the previous layout once the copy's first transaction has committed: its steps are smaller, so that the copy outlasts a few rounds of reads.
    const { store, migrate } = await startStore({ database, checkRetentionDays: 30 }, undefined, { migrationRowsPerStep: database.kind === 'postgres' ? 5 : 50, statsCacheMs: 0 });
    const [host, port] = fixtureAddress(0).split(':') as [string, string];
    const id = serverId('java', host, Number(port));
    const seen = { previous: 0, current: 0, migrating: 0 };
    const other: unknown[] = [];
    let done = false;
    const asking = (async () => {
      while (!done) {
        const answers = await Promise.allSettled([store.history(id, '24h'), store.trends(5, null), store.stats()]);
        for (const answer of answers) {
          if (answer.status === 'fulfilled') seen[answer.value?.stale ? 'previous' : 'current']++;
          else if (answer.reason instanceof MigratingError) seen.migrating++;
          else other.push(answer.reason);
        }
        // A 503 answers at once: the migration's own turns come between two rounds.
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    try {
      await migrate();
      done = true;
      await asking;
      expect(other).toEqual([]);
      expect(seen.previous).toBeGreaterThan(0);
      expect(await store.history(id, '24h')).not.toHaveProperty('stale');
    } finally {
      done = true;
      await store.close();
    }
  });
});
