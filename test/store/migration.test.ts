/**
 * Migration 0003 on a database filled in the previous layout, on SQLite and PostgreSQL (both
 * also in steps of a few rows, whose hourly rows add up across steps): the store opens it,
 * carries every check over, rolls them up by hour, and answers history, trends and statistics
 * exactly as the raw checks say; new checks land beside the old ones.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { bucketWindow, openStore, type HistoryRange } from '../../src/store/index.js';
import { MigrationRunner } from '../../src/store/migrations/migration-runner.js';
import { observerMigrations } from '../../src/store/migrations/migrations.js';
import { playersScore, SCORE_SCALE } from '../../src/store/history/ranking.js';
import { pragmaValue, sqliteBinding } from '../../src/store/sqlite/binding.js';
import { createTestDatabase } from '../support/postgres-databases.js';
import { insertLegacy, openLegacy, type LegacyCheck, type LegacyDatabase, type LegacyServer } from './legacy-layout.js';
import { FakeClock } from '../support/clock.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const T0 = Date.parse('2025-06-01T12:00:00.000Z');

/** Server A checked every 5 minutes for 3 days (offline one time in 7), B three times, and a check of no server. */
function legacyRows(a: string, b: string): { servers: LegacyServer[]; checks: LegacyCheck[] } {
  const checks: LegacyCheck[] = [];
  for (let t = T0 - 3 * DAY, i = 0; t <= T0; t += 5 * MINUTE, i++) {
    const online = i % 7 !== 0;
    checks.push({ server_id: a, checked_at: t, online: online ? 1 : 0, players_online: online ? i % 40 : null, players_max: online ? 100 : null, latency_ms: 20.4, version: '1.21.4' });
  }
  // The same check twice (one per server and millisecond is kept).
  checks.push({ ...checks[checks.length - 1]! });
  for (const [k, t] of [T0 - 2 * HOUR, T0 - HOUR, T0 - 10 * MINUTE].entries()) {
    checks.push({ server_id: b, checked_at: t, online: 1, players_online: k, players_max: 10, latency_ms: 3, version: null });
  }
  checks.push({ server_id: randomUUID(), checked_at: T0, online: 1, players_online: 1, players_max: 1, latency_ms: 1, version: null });
  const lastA = checks.filter((c) => c.server_id === a).at(-1)!;
  const server = (id: string, edition: string, host: string, port: number, first: number, last: LegacyCheck, clients: number): LegacyServer => ({
    id, edition, host, port, first_seen: first, last_seen: last.checked_at, last_online: last.online,
    record_players: 39, players_online: last.players_online ?? 0, players_max: last.players_max ?? 0,
    clients_24h: clients, trend_score: clients * SCORE_SCALE + playersScore(last.players_online),
  });
  return {
    servers: [server(a, 'java', 'a.example.com', 25565, T0 - 3 * DAY, lastA, 2), server(b, 'bedrock', 'b.example.com', 19132, T0 - 2 * HOUR, checks.at(-2)!, 0)],
    checks,
  };
}

/** What the history of `id` over `range` must say, computed from the raw checks. */
function expectedHistory(checks: LegacyCheck[], id: string, range: HistoryRange) {
  const window = bucketWindow(range, T0);
  const seen = new Set<number>();
  const mine = checks.filter((c) => c.server_id === id && c.checked_at >= window.from && c.checked_at < window.until && !seen.has(c.checked_at) && seen.add(c.checked_at));
  const buckets = Array.from({ length: window.count }, () => ({ checks: 0, online: 0, sum: 0, n: 0, max: null as number | null }));
  for (const c of mine) {
    const b = buckets[Math.floor((c.checked_at - window.from) / window.bucketMs)]!;
    b.checks += 1;
    b.online += c.online;
    if (c.online === 1 && c.players_online !== null) {
      b.n += 1;
      b.sum += c.players_online;
      b.max = Math.max(b.max ?? -1, c.players_online);
    }
  }
  return buckets.map((b) => ({ checks: b.checks, online: b.online, players_avg: b.n === 0 ? null : Math.round((b.sum / b.n) * 100) / 100, players_max: b.max }));
}

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function sqliteTarget(): Promise<LegacyDatabase> {
  const dir = mkdtempSync(join(tmpdir(), 'observer-migration-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  return { kind: 'sqlite', path: join(dir, 'observer.db') };
}

async function postgresTarget(): Promise<LegacyDatabase> {
  const database = await createTestDatabase('observer_migration');
  cleanups.push(() => database.drop());
  return { kind: 'postgres', url: database.url };
}

describe.each([
  ['SQLite', sqliteTarget, undefined],
  ['PostgreSQL', postgresTarget, undefined],
  // Steps of a few rows: a server's hour, and a check and its duplicate, fall in two steps.
  ['PostgreSQL in steps of 7 checks', postgresTarget, 7],
  // The old rowids with gaps (rows deleted): a step of the sort covers 7 of them, not 7 rows.
  ['SQLite in steps of 7 checks', sqliteTarget, 7],
])('migration to the time-series layout on %s', (_name, target, rowsPerStep) => {
  it('carries every check over and answers history, trends and statistics as the raw checks say', async () => {
    const database = await target();
    const [a, b] = [randomUUID(), randomUUID()];
    const { servers, checks } = legacyRows(a, b);
    const legacy = await openLegacy(database);
    await insertLegacy(legacy, 'servers', servers);
    await insertLegacy(legacy, 'checks', checks);
    if (database.kind === 'sqlite' && rowsPerStep !== undefined) {
      // In the same order, one rowid in three, and a gap of a million halfway.
      await sql`UPDATE checks SET id = -id`.execute(legacy);
      await sql`UPDATE checks SET id = -id * 3 + CASE WHEN -id > ${checks.length / 2} THEN 1000000 ELSE 0 END`.execute(legacy);
    }
    await legacy.destroy();

    const clock = new FakeClock(T0);
    const store = await openStore({ database, checkRetentionDays: 30 }, clock, { migrationRowsPerStep: rowsPerStep });
    try {
      for (const range of ['24h', '7d', '30d'] as const) {
        const history = await store.history(a, range);
        expect(history?.buckets.map(({ checks, online, players_avg, players_max }) => ({ checks, online, players_avg, players_max })), range).toEqual(
          expectedHistory(checks, a, range),
        );
      }
      const trends = await store.trends(10, null);
      expect(trends.data.map((s) => s.server_id)).toEqual([a, b]);
      const aChecks = checks.filter((c) => c.server_id === a).slice(0, -1);
      const up = aChecks.filter((c) => c.online === 1).length;
      expect(trends.data[0]).toMatchObject({ trend_score: 2 + playersScore(aChecks.at(-1)!.players_online) / SCORE_SCALE, record_players: 39, uptime_percentage: Math.round((up * 10000) / aChecks.length) / 100 });
      expect(await store.knowsServer(a)).toBe(true);
      const recent = (await store.stats()).recentChecks;
      expect(recent.slice(0, 3).map((r) => [r.hostname, r.checked_at])).toEqual([
        ['a.example.com', new Date(T0).toISOString()],
        ['a.example.com', new Date(T0 - 5 * MINUTE).toISOString()],
        ['b.example.com', new Date(T0 - 10 * MINUTE).toISOString()],
      ]);

      // New checks land beside the carried-over ones, new servers after the old keys.
      const c = randomUUID();
      clock.advance(MINUTE);
      for (const id of [a, c]) {
        store.recordCheck({ serverId: id, edition: 'java', host: 'c.example.com', port: 25565, checkedAt: clock.now(), online: true, playersOnline: 5, playersMax: 9, latencyMs: 1 });
      }
      await store.flush();
      expect((await store.history(a, '24h'))?.checks).toBe(expectedHistory(checks, a, '24h').reduce((n, x) => n + x.checks, 0) + 1);
      expect((await store.history(c, '24h'))?.checks).toBe(1);
    } finally {
      await store.close();
    }
    if (database.kind === 'sqlite') {
      // Vacuumed at the end of the migration: the old layout's pages given back, and
      // incremental auto-vacuum on from then on.
      const file = sqliteBinding().open(database.path, { readonly: true });
      expect(pragmaValue(file, 'auto_vacuum')).toBe(2);
      expect(pragmaValue(file, 'freelist_count')).toBe(0);
      file.close();
    }
  });
});

it('on PostgreSQL, run by a tool whose connection reads bigint as text, copies every check in its steps', async () => {
  const database = await postgresTarget();
  const { servers, checks } = legacyRows(randomUUID(), randomUUID());
  const legacy = await openLegacy(database);
  try {
    await insertLegacy(legacy, 'servers', servers);
    await insertLegacy(legacy, 'checks', checks);
    // Ids of one to three digits: a position compared as text would end the copy early.
    await new MigrationRunner(legacy, 'postgres', observerMigrations('postgres', { rowsPerStep: 7 })).run('0003_history_layout');
    const { rows } = await sql<{ copied: string }>`SELECT count(*) AS copied FROM checks`.execute(legacy);
    // One check of no server, and one duplicate, are left out.
    expect(Number(rows[0]!.copied)).toBe(checks.length - 2);
  } finally {
    await legacy.destroy();
  }
});
