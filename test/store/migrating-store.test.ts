/**
 * A store handed out before its migrations are done (as the service listens during them):
 * reads answer 503 `migrating`, checks recorded meanwhile wait in the write buffer and are
 * written once the schema is current, and `migration()` tells what runs, then null.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { serverId } from '../../src/status/server-id.js';
import { MigratingError, startStore, type MigrationEvent } from '../../src/store/index.js';
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

describe.each([
  ['SQLite', sqliteDatabase],
  ['PostgreSQL', postgresDatabase],
])('a store while it migrates, on %s', (_name, newDatabase) => {
  it('answers 503 migrating, keeps the checks recorded meanwhile, and writes them once migrated', async () => {
    const database = await newDatabase();
    await buildDatabase(database, 2, { servers: 3, checksPerServer: 10, intervalMs: 5 * MINUTE, end: END });
    const events: MigrationEvent[] = [];
    const { store, migrate } = await startStore({ database, checkRetentionDays: 30 }, undefined, { onMigration: (event) => events.push(event) });
    try {
      expect(store.migration()).toEqual({ name: '0003_history_layout', progress: 0 });
      await expect(store.trends(10, null)).rejects.toBeInstanceOf(MigratingError);
      await expect(store.stats()).rejects.toMatchObject({ code: 'migrating', statusCode: 503, headers: { 'Retry-After': expect.any(String) } });
      await expect(store.history('any', '24h')).rejects.toBeInstanceOf(MigratingError);
      await expect(store.knowsServer('any')).rejects.toBeInstanceOf(MigratingError);

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
