/**
 * Upgrades interrupted inside every transaction of every migration, by SIGKILL and by SIGTERM,
 * from every earlier schema version, on SQLite and PostgreSQL. The real service process
 * (src/main.ts through tsx, as `npm start` runs the built file) logs each statement of a
 * migration once it has run (LOG_LEVEL=debug); the test kills it at the first statement of a
 * transaction it has not killed at before, starts it again, and so on until a start completes
 * the upgrade. No start may fail; SIGTERM must end the process cleanly (exit 0). Then /history,
 * /trends and /stats answer exactly as on a copy upgraded without interruption.
 *
 * Each transaction is atomic, so a SIGKILL anywhere in it, or between it and the next, leaves
 * what a kill after its first statement leaves; a SIGTERM lets the transaction in progress
 * commit and stops before the next. From version v the kills fall in migration v + 1 (the
 * first one that version lacks), so every migration is interrupted at each of its
 * transactions, and every version is a starting point; the migrations after it run on.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/ports.mjs';
import { createTestDatabase } from '../support/postgres-databases.js';
import { buildDatabase, fixtureAddress, MIGRATION_NAMES, type HistoryShape } from './upgrade-fixture.js';
import type { LegacyDatabase } from './legacy-layout.js';

const MINUTE = 60_000;
/** 120,000 checks: the SQLite copy of migration 0003 takes three steps of its default size. */
const SHAPE: HistoryShape = { servers: 40, checksPerServer: 3000, intervalMs: 5 * MINUTE, end: Math.floor(Date.now() / MINUTE) * MINUTE - MINUTE };
/** Servers whose histories are compared. */
const COMPARED = [0, 17, 39];

interface Service {
  child: ChildProcess;
  port: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output: () => string;
}

const children: ChildProcess[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function databaseUrl(database: LegacyDatabase): string {
  return database.kind === 'sqlite' ? `sqlite:${database.path}` : database.url;
}

/** The service on `database`, every log line handed to `onLine` as it comes. */
async function startService(database: LegacyDatabase, onLine: (entry: Record<string, unknown>) => void = () => {}): Promise<Service> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: databaseUrl(database),
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'debug',
      ICMP: 'off',
      REFRESH_PINGS_PER_MINUTE: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  let pending = '';
  child.stdout!.on('data', (d: Buffer) => {
    output += d.toString();
    pending += d.toString();
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      try {
        onLine(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // not a log line
      }
    }
  });
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, port, exited, output: () => output };
}

const alive = (service: Service) => service.child.exitCode === null && service.child.signalCode === null;

/** Polls health until it says no migration runs; false if the process ended first. */
async function migrated(service: Service): Promise<boolean> {
  for (let i = 0; i < 1200 && alive(service); i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${service.port}/api/v1/status`);
      if (res.ok && ((await res.json()) as { migration?: unknown }).migration === null) return true;
    } catch {
      // not listening yet, or killed
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  if (alive(service)) throw new Error(`the migration did not end: ${service.output()}`);
  return false;
}

/** Stops the service with SIGTERM; it must exit 0. */
async function stop(service: Service): Promise<void> {
  expect(alive(service), service.output().slice(-3000)).toBe(true);
  service.child.kill('SIGTERM');
  expect(await service.exited, service.output().slice(-3000)).toEqual({ code: 0, signal: null });
}

/** Ends the service however it can, after a failure. */
async function end(service: Service): Promise<void> {
  if (!alive(service)) return;
  service.child.kill('SIGKILL');
  await service.exited;
}

/** A kill point of a log line of `migration`: inside one of its transactions (the first statement done). */
function killPoint(entry: Record<string, unknown>, migration: string): string | null {
  if (entry.msg !== 'migration statement done' || entry.statement !== 1 || entry.migration !== migration) return null;
  return `${migration}/${String(entry.step)}`;
}

/**
 * Starts the service on `database` again and again, killing each start with `signal` at the
 * first transaction of `migration` it has not been killed in, until a start completes the
 * upgrade (left running, returned with the points killed at).
 */
async function interruptedUpgrade(database: LegacyDatabase, migration: string, signal: 'SIGKILL' | 'SIGTERM'): Promise<{ service: Service; killedAt: string[] }> {
  const killedAt: string[] = [];
  for (let start = 0; start < 100; start++) {
    let killed = false;
    const service = await startService(database, (entry) => {
      const point = killPoint(entry, migration);
      if (killed || point === null || killedAt.includes(point)) return;
      killed = true;
      killedAt.push(point);
      service.child.kill(signal);
    });
    const done = await migrated(service);
    if (done && !killed) return { service, killedAt };
    const exit = await service.exited;
    // Killed, and nothing else: a start that fails on its own is what this test is against.
    expect(killed, service.output()).toBe(true);
    expect(exit, service.output()).toEqual(signal === 'SIGKILL' ? { code: null, signal: 'SIGKILL' } : { code: 0, signal: null });
  }
  throw new Error('the upgrade never completed');
}

/** What the service answers about the fixture's history; the request counters left out (they count these requests). */
async function answers(service: Service): Promise<unknown> {
  const get = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${service.port}/api/v1${path}`);
    return { status: res.status, ...((await res.json()) as Record<string, unknown>) };
  };
  const histories = [];
  for (const i of COMPARED) for (const range of ['24h', '7d', '30d']) histories.push(await get(`/history/${fixtureAddress(i)}?range=${range}`));
  const { totalRequests: _t, apiRequests: _a, serverQueries: _s, ...stats } = (await get('/stats')) as Record<string, unknown>;
  return { histories, trends: await get('/trends?limit=50'), stats };
}

/**
 * A service's answers and the uninterrupted one's, read beside each other: the ranges end at
 * the moment of the request, so a pair read across a bucket's boundary is read again.
 */
async function answersBeside(service: Service, unbroken: Service): Promise<{ got: unknown; reference: unknown }> {
  for (let attempt = 1; ; attempt++) {
    const before = await answers(unbroken);
    const got = await answers(service);
    const after = await answers(unbroken);
    if (attempt === 3 || isDeepStrictEqual(before, after)) return { got, reference: after };
  }
}

async function sqliteDatabase(): Promise<LegacyDatabase> {
  const dir = mkdtempSync(join(tmpdir(), 'observer-upgrade-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  return { kind: 'sqlite', path: join(dir, 'observer.db') };
}

async function postgresDatabase(): Promise<LegacyDatabase> {
  const database = await createTestDatabase('observer_upgrade');
  cleanups.push(() => database.drop());
  return { kind: 'postgres', url: database.url };
}

const VERSIONS = MIGRATION_NAMES.map((_, version) => version);

describe.each([
  ['SQLite', sqliteDatabase],
  ['PostgreSQL', postgresDatabase],
])('an upgrade interrupted on %s', (name, newDatabase) => {
  it.each(VERSIONS)(
    'from version %i, killed by SIGKILL and by SIGTERM in every transaction of the next migration, completes and answers as one never interrupted',
    { timeout: 600_000 },
    async (version) => {
      const migration = MIGRATION_NAMES[version]!;
      const [killed, stopped, reference] = [await newDatabase(), await newDatabase(), await newDatabase()];
      for (const database of [killed, stopped, reference]) await buildDatabase(database, version, SHAPE);

      const upgrades = [await interruptedUpgrade(killed, migration, 'SIGKILL'), await interruptedUpgrade(stopped, migration, 'SIGTERM')];
      // While the reference migrates: what health, and a route that needs stored data, say.
      let during: Promise<[Response, Response]> | null = null;
      const unbroken = await startService(reference, (entry) => {
        if (during === null && entry.msg === 'migration statement done' && entry.migration === migration) {
          const get = (path: string) => fetch(`http://127.0.0.1:${unbroken.port}/api/v1${path}`);
          during = Promise.all([get('/status'), get(`/history/${fixtureAddress(0)}`)]);
        }
      });
      try {
        // The copy of 0003 on SQLite: its first transaction, three steps, its last, the vacuum after it.
        const transactions = name === 'SQLite' && migration === '0003_history_layout' ? 6 : 1;
        for (const { killedAt } of upgrades) expect(killedAt.length, killedAt.join(' ')).toBeGreaterThanOrEqual(transactions);
        expect(await migrated(unbroken)).toBe(true);
        if (migration === '0003_history_layout') {
          // The copy takes long enough for both answers to come while it runs.
          const [health, history] = await during!;
          expect(await health.json()).toMatchObject({ status: 'OK', migration: { name: migration, progress: expect.any(Number) } });
          expect(history.status).toBe(503);
          expect(history.headers.get('retry-after')).toMatch(/^\d+$/);
          expect(await history.json()).toMatchObject({ status: 'error', error: 'migrating' });
        }
        const expected = await answers(unbroken);
        if (version > 0) expect((expected as { histories: Array<{ status: number; checks: number }> }).histories[0]).toMatchObject({ status: 200, checks: expect.any(Number) });
        for (const { service } of upgrades) {
          const { got, reference } = await answersBeside(service, unbroken);
          expect(got).toEqual(reference);
        }
        for (const service of [...upgrades.map((u) => u.service), unbroken]) await stop(service);
      } finally {
        for (const service of [...upgrades.map((u) => u.service), unbroken]) await end(service);
      }
    },
  );
});
