/**
 * Upgrades of instances sharing one PostgreSQL database, as a rolling deploy meets them, with the
 * real service (`node dist/main.js`, what `npm start` runs) in processes of its own.
 *
 * A migration longer than the statement timeout: this build with one more migration
 * (test/support/test-migration.mjs, preloaded), the pool's statement timeout lowered to 1 s through
 * DATABASE_URL. Instance A migrates; B, started meanwhile, waits for its turn and answers
 * throughout: health 200 with the migration named, /history 503 `migrating`, uncached status
 * look-ups 200. A gets SIGTERM in the migration's statement: it exits 0, its transaction rolled
 * back, no backend of it left; B, which never exits, then applies the migration itself and
 * serves the history, with every look-up it answered meanwhile in it. A started again finds
 * the migration applied. No migration lock is left once both stop.
 *
 * PostgreSQL's history rewrite (0003) stopped by SIGTERM after its first copy step: the
 * process exits 0, and the next start goes on from the step recorded (no new first
 * transaction, the copy from where it was) and answers /history, /trends and /stats as an
 * upgrade never interrupted does.
 */
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { APPENDED_MIGRATION_NAME, appendedMigrationEnv } from '../support/appended-migration.js';
import { createTestDatabase } from '../support/postgres-databases.js';
import { LOOPBACK_ALLOWLIST } from '../support/services.js';
import { alive, answersBeside, children, end, migrated, startService, stop, type Service } from './service-process.js';
import { buildDatabase, fixtureAddress, MIGRATION_NAMES, type HistoryShape } from './upgrade-fixture.js';

const MINUTE = 60_000;
const NOW = Math.floor(Date.now() / MINUTE) * MINUTE - MINUTE;
/** The statement timeout the instances run with (ms). */
const STATEMENT_TIMEOUT_MS = 1_000;
/**
 * The appended migration's one statement (s): in A, longer than the test could ever take to
 * reach its SIGTERM (A is stopped in it); in B, which applies it once A stopped, a few times
 * the statement timeout.
 */
const MIGRATION_SECONDS = { a: 600, b: 4 };
/** Uncached look-ups: each a loopback port nothing listens on (answered offline at once, and recorded). */
const LOOKUP_ENV = {
  TARGET_ALLOWLIST: LOOPBACK_ALLOWLIST.join(','),
  NEW_SERVERS_PER_CLIENT_PER_DAY: '1000000',
  TARGET_PINGS_PER_MINUTE: '100000',
  PING_TIMEOUT_MS: '2000',
};

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** `url` with libpq-style parameters added (pg reads them, and they win over the pool's own). */
function withParameters(url: string, parameters: Record<string, string>): string {
  const out = new URL(url);
  for (const [key, value] of Object.entries(parameters)) out.searchParams.set(key, value);
  return out.toString();
}

async function query<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

async function until(what: string, test: () => Promise<boolean> | boolean, service?: Service): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (await test()) return;
    if (service && !alive(service)) throw new Error(`${what}: the service exited\n${service.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what}: never happened`);
}

async function get(service: Service, path: string): Promise<{ status: number; body: Record<string, unknown>; retryAfter: string | null }> {
  const res = await fetch(`http://127.0.0.1:${service.port}/api/v1${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, retryAfter: res.headers.get('retry-after') };
}

/** What a service answered while probed: health, a stored server's history, uncached look-ups (their ports). */
interface Probed {
  health: number[];
  migrationNames: Array<string | null>;
  history: Array<{ status: number; error: unknown; retryAfter: string | null }>;
  lookups: number[];
  failures: string[];
}

/** Probes `service` every 50 ms and looks up new loopback ports two at a time, until stopped. */
function probe(service: Service, firstPort: number): { probed: Probed; stop: () => Promise<Probed> } {
  const probed: Probed = { health: [], migrationNames: [], history: [], lookups: [], failures: [] };
  let stopped = false;
  let next = firstPort;
  const record = async (work: () => Promise<void>) => {
    while (!stopped) {
      await work().catch((error: unknown) => void probed.failures.push(String(error)));
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const loops = [
    record(async () => {
      const { status, body } = await get(service, '/status');
      probed.health.push(status);
      probed.migrationNames.push((body.migration as { name?: string } | null)?.name ?? null);
    }),
    record(async () => {
      const { status, body, retryAfter } = await get(service, `/history/${fixtureAddress(0)}`);
      probed.history.push({ status, error: body.error, retryAfter });
    }),
    ...[0, 1].map(() =>
      record(async () => {
        const port = next++;
        const { status } = await get(service, `/status/127.0.0.1:${port}`);
        if (status === 200) probed.lookups.push(port);
        else probed.failures.push(`look-up of port ${port}: ${status}`);
      }),
    ),
  ];
  return {
    probed,
    stop: async () => {
      stopped = true;
      await Promise.all(loops);
      return probed;
    },
  };
}

/** The look-ups among `ports` whose check /history does not show once the service has written its queue. */
async function missingFromHistory(service: Service, ports: number[]): Promise<number[]> {
  await until('the write buffer emptied', async () => (await get(service, '/status')).body.write_buffer === 0, service);
  const missing: number[] = [];
  for (const port of ports) {
    const { status, body } = await get(service, `/history/127.0.0.1:${port}?range=24h`);
    if (status !== 200 || body.checks !== 1) missing.push(port);
  }
  return missing;
}

const logged = (service: Service, msg: string, migration?: string) =>
  service.log.filter((entry) => entry.msg === msg && (migration === undefined || entry.migration === migration));

it('an instance started while another runs a migration longer than the statement timeout waits, answering, and never exits; the migrating one stops cleanly on SIGTERM', { timeout: 300_000 }, async () => {
  const database = await createTestDatabase('observer_rolling');
  cleanups.push(() => database.drop());
  await buildDatabase({ kind: 'postgres', url: database.url }, MIGRATION_NAMES.length, { servers: 5, checksPerServer: 50, intervalMs: 5 * MINUTE, end: NOW });
  const url = (name: string) => withParameters(database.url, { statement_timeout: String(STATEMENT_TIMEOUT_MS), application_name: name });
  const start = (name: string, seconds: number) =>
    startService({ kind: 'postgres', url: url(name) }, undefined, { env: { ...LOOKUP_ENV, ...appendedMigrationEnv(seconds) } });
  const sleeping = (name: string) => async () =>
    (await query(database.url, `SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'select pg_sleep%' AND state = 'active'`, [name])).length > 0;

  const a = await start('observer-a', MIGRATION_SECONDS.a);
  const services = [a];
  try {
    await until('A in the migration', sleeping('observer-a'), a);
    const b = await start('observer-b', MIGRATION_SECONDS.b);
    services.push(b);
    await until('B waiting for its turn', () => logged(b, 'another instance is migrating the database: waiting for its turn').length > 0, b);
    const load = probe(b, 30_000);
    // Past the statement timeout several times over, then A is stopped in its statement.
    await new Promise((r) => setTimeout(r, 3 * STATEMENT_TIMEOUT_MS));
    expect(await sleeping('observer-a')()).toBe(true);
    a.child.kill('SIGTERM');
    expect(await a.exited, a.output().slice(-3000)).toEqual({ code: 0, signal: null });
    expect(a.output()).not.toContain('shutdown took too long');
    expect(logged(a, 'migration step committed', APPENDED_MIGRATION_NAME)).toEqual([]);
    await until('no backend of A left', async () => (await query(database.url, `SELECT 1 FROM pg_stat_activity WHERE application_name = 'observer-a'`)).length === 0);

    // B takes its turn, runs the migration itself, and serves the history once it commits.
    await until('B migrated', async () => (await get(b, '/status')).body.migration === null, b);
    await until('B serving the history', () => load.probed.history.at(-1)?.status === 200, b);
    const probed = await load.stop();
    expect(alive(b)).toBe(true);
    expect(logged(b, 'migration step committed', APPENDED_MIGRATION_NAME)).toHaveLength(1);
    expect(probed.failures).toEqual([]);
    expect(new Set(probed.health)).toEqual(new Set([200]));
    expect(probed.migrationNames[0]).toBe(APPENDED_MIGRATION_NAME);
    // 503 `migrating` with Retry-After until the commit, then 200: never another answer.
    const firstServed = probed.history.findIndex((h) => h.status === 200);
    expect(firstServed).toBeGreaterThan(0);
    expect(probed.history.slice(0, firstServed).every((h) => h.status === 503 && h.error === 'migrating' && /^\d+$/.test(h.retryAfter ?? ''))).toBe(true);
    expect(new Set(probed.history.slice(firstServed).map((h) => h.status))).toEqual(new Set([200]));
    expect(probed.lookups.length).toBeGreaterThan(0);
    expect(await missingFromHistory(b, probed.lookups)).toEqual([]);

    // A started again finds the migration applied and serves at once.
    const again = await start('observer-a', MIGRATION_SECONDS.a);
    services.push(again);
    expect(await migrated(again)).toBe(true);
    expect(logged(again, 'migration statement done')).toEqual([]);
    expect((await get(again, `/history/${fixtureAddress(0)}`)).status).toBe(200);
    expect(await query(database.url, 'SELECT name FROM kysely_migration WHERE name = $1', [APPENDED_MIGRATION_NAME])).toHaveLength(1);
    for (const service of [b, again]) await stop(service);
    expect(await query(database.url, `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = $1)`, [database.name])).toEqual([]);
    for (const service of services) expect(logged(service, 'migration failed; the database is left as the last committed step made it')).toEqual([]);
  } finally {
    for (const service of services) await end(service);
  }
});

it('a SIGTERM during the history rewrite exits 0, and the next start resumes it and answers as an upgrade never interrupted', { timeout: 300_000 }, async () => {
  const shape: HistoryShape = { servers: 40, checksPerServer: 3000, intervalMs: MINUTE, end: NOW };
  const version = MIGRATION_NAMES.indexOf('0003_history_layout');
  const [interrupted, reference] = [await createTestDatabase('observer_rewrite'), await createTestDatabase('observer_rewrite')];
  cleanups.push(() => interrupted.drop(), () => reference.drop());
  for (const database of [interrupted, reference]) await buildDatabase({ kind: 'postgres', url: database.url }, version, shape);

  const unbroken = await startService({ kind: 'postgres', url: reference.url });
  const services = [unbroken];
  try {
    let signalled = false;
    const named = withParameters(interrupted.url, { application_name: 'observer-stopped' });
    const first = await startService({ kind: 'postgres', url: named }, (entry, self) => {
      const copyStep = entry.msg === 'migration step committed' && entry.migration === '0003_history_layout' && /^\d+$/.test(String(entry.step));
      if (copyStep && !signalled) {
        signalled = true;
        self.child.kill('SIGTERM');
      }
    });
    services.push(first);
    // Stopped before the migration ended.
    expect(await migrated(first)).toBe(false);
    expect(signalled).toBe(true);
    expect(await first.exited, first.output().slice(-3000)).toEqual({ code: 0, signal: null });
    const committed = logged(first, 'migration step committed', '0003_history_layout').map((e) => String(e.step));
    expect(committed[0]).toBe('begin');
    expect(await query(interrupted.url, 'SELECT name FROM kysely_migration WHERE name = $1', ['0003_history_layout'])).toEqual([]);
    await until('no backend of the stopped start left', async () => (await query(interrupted.url, `SELECT 1 FROM pg_stat_activity WHERE application_name = 'observer-stopped'`)).length === 0);

    const second = await startService({ kind: 'postgres', url: interrupted.url });
    services.push(second);
    expect(await migrated(second), second.output().slice(-3000)).toBe(true);
    expect(await migrated(unbroken)).toBe(true);
    // Resumed: no first transaction again, and the copy went on from a step the first start committed.
    const resumed = logged(second, 'migration step committed', '0003_history_layout').map((e) => String(e.step));
    const copySteps = (steps: string[]) => steps.filter((step) => /^\d+$/.test(step)).map(Number);
    expect(resumed).not.toContain('begin');
    expect(copySteps(resumed)[0]).toBeGreaterThan(Math.max(...copySteps(committed)));

    const { got, reference: wanted } = await answersBeside(second, unbroken, [0, 17, 39]);
    expect(got).toEqual(wanted);
    for (const service of [second, unbroken]) await stop(service);
  } finally {
    for (const service of services) await end(service);
  }
});
