/**
 * A full disk, and a database that refuses writes, under an uncached look-up load of the
 * built service (`node dist/main.js`, what `npm start` runs), with a real Minecraft server and
 * dnsmasq names: once the database can write again, every look-up answered before, during and
 * after the fault is in `/api/v1/history/…` (as many checks per server as look-ups answered for
 * it), no row was dropped and no batch was set aside.
 *  - SQLite: the file on a small tmpfs of its own (root only: the test mounts it); a file
 *    written beside it takes every free page, and is deleted again.
 *  - PostgreSQL: its database switched read-only (`default_transaction_read_only`), then back;
 *    and its tables in a tablespace on a small tmpfs (root only), filled and freed the same way.
 * Each server is looked up twice, as Java and as legacy (one server, two cache entries): two
 * pings, two checks.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../../scripts/ports.mjs';
import { sqliteBinding, pragmaValue } from '../../src/store/sqlite/binding.js';
import { ATTEMPTS_BEFORE_SET_ASIDE } from '../../src/store/history/write-queue.js';
import { waitForHealth } from '../support/instances.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { asAdmin, createTestDatabase } from '../support/postgres-databases.js';
import { parseExposition, value } from '../support/prometheus.js';

const ROOT = join(import.meta.dirname, '..', '..');
const METRICS_TOKEN = 'storage-faults-metrics-token';
/** Look-ups in flight at once. */
const CONCURRENCY = 16;
/** Servers looked up before the fault, during it, and after it. */
const SERVERS_PER_PHASE = 100;

const cleanups: Array<() => Promise<void> | void> = [];
let minecraft: RunningJavaServer;
beforeAll(async () => {
  minecraft = await startJavaServer({ motd: 'storage faults', onlinePlayers: 2 });
});
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await minecraft?.close();
});

interface Service {
  base: string;
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

async function startService(databaseUrl: string): Promise<Service> {
  const port = await freePort();
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      DNS_SERVERS: '127.0.0.1:5353',
      TARGET_ALLOWLIST: '127.0.0.0/8',
      ICMP: 'off',
      REFRESH_PINGS_PER_MINUTE: '0',
      RATE_LIMIT_STATUS: '10000000',
      RATE_LIMIT_GENERAL: '10000000',
      TARGET_PINGS_PER_MINUTE: '100000',
      NEW_SERVERS_PER_CLIENT_PER_DAY: '1000000',
      // Other work on the machine is not the subject: look-ups are never shed for its lag.
      SHED_EVENT_LOOP_DELAY_MS: '10000',
      METRICS_TOKEN,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  await waitForHealth(port);
  return { base: `http://127.0.0.1:${port}`, child, output: () => output, exited };
}

async function stopService(service: Service): Promise<void> {
  service.child.kill('SIGTERM');
  expect(await service.exited, service.output().slice(-3000)).toBe(0);
}

interface Health {
  database: string;
  write_buffer: number;
  write_buffer_dropped: number;
}

async function health(service: Service): Promise<Health> {
  return (await (await fetch(`${service.base}/api/v1/status`)).json()) as Health;
}

/** The history metrics: failed write attempts, batches set aside, rows dropped. */
async function historyMetrics(service: Service): Promise<{ failed: number; setAside: number; dropped: number }> {
  const text = await (await fetch(`${service.base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  const exposition = parseExposition(text);
  return {
    failed: value(exposition, 'observer_history_write_failures_total'),
    setAside: value(exposition, 'observer_history_dead_letter_total'),
    dropped: value(exposition, 'observer_history_dropped_total'),
  };
}

/** Polls `check` until it holds; never a time limit of its own (the test's timeout is one). */
async function until(check: () => Promise<boolean> | boolean, pauseMs = 100): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, pauseMs));
}

/**
 * Uncached look-ups, CONCURRENCY at a time: each server a name never asked before, looked up
 * as Java, then as legacy. Counts the look-ups answered (200, pinged for this request) per
 * server; `phase(n)` waits until n servers more have been looked up.
 */
function lookupLoad(service: Service, prefix: string) {
  const answered = new Map<string, number>();
  let next = 0;
  let done = 0;
  let stopped = false;
  const lookUp = async (address: string, query: string) => {
    const res = await fetch(`${service.base}/api/v1/status/${address}${query}`);
    await res.arrayBuffer();
    expect(res.status, address).toBe(200);
    if (res.headers.get('x-cache') === 'MISS') answered.set(address, (answered.get(address) ?? 0) + 1);
  };
  const loop = async () => {
    while (!stopped) {
      const address = `${prefix}-${next++}.any.observer.test:${minecraft.port}`;
      await lookUp(address, '');
      await lookUp(address, '?legacy=true');
      done += 1;
    }
  };
  const loops = Promise.all(Array.from({ length: CONCURRENCY }, loop));
  return {
    answered,
    /** Waits until `n` more servers have been looked up. */
    async phase(n: number): Promise<void> {
      const target = done + n;
      await until(() => done >= target, 20);
    },
    async stop(): Promise<void> {
      stopped = true;
      await loops;
    },
  };
}

/** Every answered look-up is a check in `/history`: as many per server as were answered. */
async function expectAllInHistory(service: Service, answered: Map<string, number>): Promise<{ lookups: number; rows: number }> {
  let rows = 0;
  const missing: string[] = [];
  const servers = [...answered];
  const readers = Array.from({ length: CONCURRENCY }, async () => {
    for (let entry = servers.pop(); entry; entry = servers.pop()) {
      const [address, count] = entry;
      const res = await fetch(`${service.base}/api/v1/history/${address}?range=24h`);
      const body = (await res.json()) as { checks?: number; stale?: boolean };
      rows += body.checks ?? 0;
      if (res.status !== 200 || body.stale || body.checks !== count) missing.push(`${address}: ${count} answered, ${res.status} ${JSON.stringify(body).slice(0, 80)}`);
    }
  });
  await Promise.all(readers);
  expect(missing).toEqual([]);
  return { lookups: [...answered.values()].reduce((sum, n) => sum + n, 0), rows };
}

/**
 * The whole run: a phase of look-ups, the fault (`fail`), look-ups until the queue has failed
 * more writes than a batch may be refused before it is set aside, the fault gone (`recover`),
 * a last phase; then every look-up is looked for in the history.
 */
async function lookupsThrough(service: Service, prefix: string, fail: () => Promise<void>, recover: () => Promise<void>) {
  const started = performance.now();
  const load = lookupLoad(service, prefix);
  await load.phase(SERVERS_PER_PHASE);
  const before = await historyMetrics(service);
  await fail();
  await load.phase(SERVERS_PER_PHASE);
  // More failed writes than a refused batch is tried before it is set aside: the batch held
  // since the fault began has failed that often.
  await until(async () => (await historyMetrics(service)).failed > before.failed + ATTEMPTS_BEFORE_SET_ASIDE);
  const during = await health(service);
  await recover();
  await until(async () => (await health(service)).database === 'ok');
  await load.phase(SERVERS_PER_PHASE);
  await load.stop();
  await until(async () => (await health(service)).write_buffer === 0);
  const found = await expectAllInHistory(service, load.answered);
  const metrics = await historyMetrics(service);
  expect(found.rows).toBe(found.lookups);
  expect(metrics.setAside).toBe(0);
  expect(metrics.dropped).toBe(0);
  return { ...found, servers: load.answered.size, during, failedWrites: metrics.failed - before.failed, seconds: (performance.now() - started) / 1000 };
}

/** Writes a file in `dir` until the file system has no free block left; returns its path. */
function fillDisk(dir: string): string {
  const path = join(dir, 'filler');
  const fd = openSync(path, 'w');
  try {
    for (const size of [1 << 20, 4096]) {
      const chunk = Buffer.alloc(size);
      for (;;) {
        try {
          writeSync(fd, chunk);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw error;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return path;
}

const root = process.getuid?.() === 0;

/** A tmpfs of `size` mounted for the test (unmounted and removed after it, whatever happened). */
function smallDisk(size: string): string {
  const mount = mkdtempSync(join(tmpdir(), 'observer-full-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', mount]);
  cleanups.push(() => {
    execFileSync('umount', ['-l', mount]);
    rmSync(mount, { recursive: true, force: true });
  });
  return mount;
}

/** The number of rows in `dead_batches` of a PostgreSQL database. */
async function deadBatches(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM dead_batches')).rows[0]!.n);
  } finally {
    await client.end();
  }
}

it.skipIf(!root)('SQLite on a disk that fills up: every answered look-up is in the history once there is room again', async () => {
  const mount = smallDisk('48m');
  const path = join(mount, 'observer.db');
  const service = await startService(`sqlite:${path}`);
  let filler = '';
  const run = await lookupsThrough(
    service,
    'full',
    async () => {
      filler = fillDisk(mount);
    },
    async () => unlinkSync(filler),
  );
  await stopService(service);
  const db = sqliteBinding().open(path, { readonly: true });
  try {
    expect(pragmaValue(db, 'integrity_check')).toBe('ok');
    expect(db.prepare('SELECT count(*) AS n FROM dead_batches').get()).toMatchObject({ n: 0 });
  } finally {
    db.close();
  }
  expect(service.output()).toMatch(/database or disk is full/);
  expect(service.output()).not.toMatch(/cannot rollback/);
  console.log(
    `SQLite, disk full: ${run.lookups} look-ups answered (${run.servers} servers), ${run.rows} checks found in /history, ` +
      `${run.failedWrites} failed writes (health while full: ${JSON.stringify(run.during)}), 0 batches set aside, ${run.seconds.toFixed(1)} s`,
  );
}, 300_000);

it('PostgreSQL switched read-only: every answered look-up is in the history once it is writable again', async () => {
  const database = await createTestDatabase('observer_storage_faults');
  cleanups.push(() => database.drop());
  // A database setting applies to every new session: the service's pooled ones are ended, and
  // reconnect with it.
  const setAndReconnect = (setting: string) =>
    asAdmin(async (c) => {
      await c.query(`ALTER DATABASE ${database.name} SET ${setting}`);
      await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database.name]);
    });
  const service = await startService(database.url);
  const run = await lookupsThrough(
    service,
    'readonly',
    () => setAndReconnect('default_transaction_read_only = on'),
    () => setAndReconnect('default_transaction_read_only = off'),
  );
  await stopService(service);
  expect(await deadBatches(database.url)).toBe(0);
  expect(service.output()).toMatch(/read-only transaction/);
  console.log(
    `PostgreSQL, read-only: ${run.lookups} look-ups answered (${run.servers} servers), ${run.rows} checks found in /history, ` +
      `${run.failedWrites} failed writes (health while read-only: ${JSON.stringify(run.during)}), 0 batches set aside, ${run.seconds.toFixed(1)} s`,
  );
}, 300_000);

it.skipIf(!root)('PostgreSQL whose history tables fill their disk: every answered look-up is in the history once there is room again', async () => {
  // The database's tables in a tablespace on a small file system of their own.
  const mount = smallDisk('48m');
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  chownSync(mount, uid, uid);
  const space = `observer_full_${randomBytes(4).toString('hex')}`;
  await asAdmin((c) => c.query(`CREATE TABLESPACE ${space} LOCATION '${mount}'`));
  cleanups.push(() => asAdmin((c) => c.query(`DROP TABLESPACE IF EXISTS ${space}`)).then(() => {}));
  const database = await createTestDatabase('observer_storage_faults');
  cleanups.push(() => database.drop());
  await asAdmin((c) => c.query(`ALTER DATABASE ${database.name} SET default_tablespace = ${space}`));
  const service = await startService(database.url);
  let filler = '';
  const run = await lookupsThrough(
    service,
    'pgfull',
    async () => {
      filler = fillDisk(mount);
    },
    async () => unlinkSync(filler),
  );
  await stopService(service);
  expect(await deadBatches(database.url)).toBe(0);
  expect(service.output()).toMatch(/No space left on device/);
  console.log(
    `PostgreSQL, disk full: ${run.lookups} look-ups answered (${run.servers} servers), ${run.rows} checks found in /history, ` +
      `${run.failedWrites} failed writes (health while full: ${JSON.stringify(run.during)}), 0 batches set aside, ${run.seconds.toFixed(1)} s`,
  );
}, 300_000);
