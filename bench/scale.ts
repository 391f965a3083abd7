/**
 * A server list's size: `npm run bench -- scale`.
 *
 * Builds the history of a server list (bench/scale/data.ts) at four sizes on SQLite, the
 * default (S0 100 servers × 30 days, S1 1,000 × 30 d, S2 10,000 × 3 d, S3 100,000 × 1 d; every
 * server checked every 5 minutes), and one on PostgreSQL (P: 100,000 × 30 days unless
 * BENCH_PG_SERVERS / BENCH_PG_DAYS say less), then for each starts the service as `npm start`
 * runs it (built, in its own process, default settings but for the database) and measures
 * from other processes:
 *
 *  - start-up to the first 200, with a retention backlog (an hour of rows past retention);
 *  - the longest event-loop stall, from a health probe every 5 ms (bench/scale/probe.mjs),
 *    from the first 200 through the first retention pass (10 s after start), and in each load;
 *  - /trends first page (cold, then p50/p99 at 8 connections), /history 24 h / 7 d / 30 d
 *    across all servers, /stats and the server page, each at 8 connections for 8 s;
 *  - RSS after the loads (once the service has idled 10 s) and its high-water mark;
 *  - database bytes per check of history held, and per raw row.
 *
 * Then, in-process on SQLite (diagnostics of size, not speed): the database's size over 40
 * simulated days of 1,000 servers with retention run each day, and the time migration 0003
 * takes on an S2-size database in the previous layout.
 *
 * The one setting changed from the defaults is the per-client rate limit: every request comes
 * from one loopback client here, and the point is what the service holds, not what one client
 * may ask. BENCH_SCALES=S0,S1,P picks sizes (default all); BENCH_LOAD_SECONDS sets the loads'
 * length. S0 is the baseline the ratios compare with.
 */
import { spawn, fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { buildLegacySqlite, buildPostgres, buildSqlite, type Built, type ScaleSpec } from './scale/data.js';
import { freePort } from '../scripts/ports.mjs';
import { fmt, serviceEnv, startCommand } from './support.js';
import { retentionOverDays } from './scale/retention.js';
import { openStore } from '../src/store/index.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 8);
const CONNECTIONS = 8;
const MIB = 1024 * 1024;

const SQLITE_SCALES: ScaleSpec[] = [
  { name: 'S0', servers: 100, days: 30 },
  { name: 'S1', servers: 1_000, days: 30 },
  { name: 'S2', servers: 10_000, days: 3 },
  { name: 'S3', servers: 100_000, days: 1 },
];
const PG_SCALE: ScaleSpec = { name: 'P', servers: Number(process.env.BENCH_PG_SERVERS ?? 100_000), days: Number(process.env.BENCH_PG_DAYS ?? 30) };
const wanted = (process.env.BENCH_SCALES ?? 'S0,S1,S2,S3,P,retention,migration').split(',');

interface LoadFigures {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

interface Row {
  spec: ScaleSpec;
  kind: 'SQLite' | 'PostgreSQL';
  built: Built;
  startupMs: number;
  trendsColdMs: number;
  loads: Record<string, LoadFigures>;
  stalls: Record<string, number>;
  retention: string;
  rss: number;
  hwm: number;
  bytes: number;
}

function procStatus(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : NaN;
}

function runLoad(options: { url: string; connections: number; seconds: number; distinct?: string; cycle?: number }): Promise<LoadFigures> {
  return new Promise((resolve, reject) => {
    const worker = spawn(process.execPath, [join(ROOT, 'bench/load-worker.mjs'), JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    worker.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    worker.on('error', reject);
    worker.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as LoadFigures) : reject(new Error(`load worker exited with ${code}`))));
  });
}

class Probe {
  private readonly child: ChildProcess;
  constructor(base: string) {
    this.child = fork(join(ROOT, 'bench/scale/probe.mjs'), [`${base}/api/v1/status`], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  }
  phase(name: string): void {
    this.child.send({ phase: name });
  }
  async report(): Promise<Record<string, { max: number }>> {
    return new Promise((resolve) => {
      this.child.once('message', (message) => resolve((message as { phases: Record<string, { max: number }> }).phases));
      this.child.send({ report: true });
    });
  }
  stop(): void {
    this.child.send({ stop: true });
  }
}

/** Starts the service on `databaseUrl` and waits for its first 200; returns it and how long that took. */
async function startService(databaseUrl: string, dir: string) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const child = spawn(...startCommand(ROOT), {
    cwd: ROOT,
    env: serviceEnv(port, dir, { DATABASE_URL: databaseUrl, RATE_LIMIT_GENERAL: '10000000', RATE_LIMIT_STATUS: '10000000' }),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let log = '';
  child.stdout!.on('data', (chunk: Buffer) => (log += chunk.toString()));
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}`);
    const ok = await fetch(`${base}/api/v1/status`).then((r) => r.ok, () => false);
    if (ok) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return { child, base, startupMs: performance.now() - started, log: () => log };
}

async function stopService(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** Waits for the service's first retention pass to be logged (it runs 10 s after start). */
async function retentionPass(log: () => string): Promise<string> {
  const deadline = performance.now() + 600_000;
  while (performance.now() < deadline) {
    const line = log().split('\n').find((l) => l.includes('retention pass done'));
    if (line) {
      const { retention } = JSON.parse(line) as { retention: { removed: Record<string, number>; ms: number } };
      return `${retention.ms} ms: ${Object.entries(retention.removed).map(([k, v]) => `${fmt(v)} ${k}`).join(', ')}`;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return 'not seen within 10 minutes';
}

async function measureScale(spec: ScaleSpec, kind: Row['kind'], databaseUrl: string, dir: string, built: Built, bytes: () => number): Promise<Row> {
  const service = await startService(databaseUrl, dir);
  const probe = new Probe(service.base);
  // From the first 200 through the first retention pass (10 s after start): the backlog.
  probe.phase('retention');
  const stalls: Record<string, number> = {};
  const loads: Record<string, LoadFigures> = {};
  try {
    const coldStart = performance.now();
    await fetch(`${service.base}/api/v1/trends?limit=50`).then((r) => r.arrayBuffer());
    const trendsColdMs = performance.now() - coldStart;
    const retention = await retentionPass(service.log);
    const scenarios: Array<[string, Parameters<typeof runLoad>[0]]> = [
      ['trends', { url: `${service.base}/api/v1/trends?limit=50`, connections: CONNECTIONS, seconds: LOAD_SECONDS }],
      ...(['24h', '7d', '30d'] as const).map((range): [string, Parameters<typeof runLoad>[0]] => [
        `history ${range}`,
        { url: `${service.base}/api/v1/history/{n}.scale.example?range=${range}`, distinct: 'srv', cycle: spec.servers, connections: CONNECTIONS, seconds: LOAD_SECONDS },
      ]),
      ['stats', { url: `${service.base}/api/v1/stats`, connections: CONNECTIONS, seconds: LOAD_SECONDS }],
      ['server page', { url: `${service.base}/server/{n}.scale.example`, distinct: 'srv', cycle: spec.servers, connections: CONNECTIONS, seconds: LOAD_SECONDS }],
    ];
    for (const [name, options] of scenarios) {
      probe.phase(name);
      loads[name] = await runLoad(options);
    }
    probe.phase('idle');
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    const rss = procStatus(service.child.pid!, 'VmRSS');
    const hwm = procStatus(service.child.pid!, 'VmHWM');
    for (const [phase, figures] of Object.entries(await probe.report())) stalls[phase] = figures.max;
    return { spec, kind, built, startupMs: service.startupMs, trendsColdMs, loads, stalls, retention, rss, hwm, bytes: bytes() };
  } finally {
    probe.stop();
    await stopService(service.child);
  }
}

function sqliteBytes(path: string): number {
  return [path, `${path}-wal`].filter(existsSync).reduce((n, file) => n + statSync(file).size, 0);
}

function printRow(row: Row, baseline: Row | undefined): void {
  const { spec, built, loads, stalls } = row;
  const worstStall = Math.max(...Object.entries(stalls).filter(([p]) => p !== 'idle').map(([, v]) => v));
  console.log(`\n${spec.name} (${row.kind}): ${fmt(spec.servers)} servers × ${spec.days} days = ${fmt(built.checks)} checks of history; ${fmt(built.rawRows)} raw rows, ${fmt(built.hourRows)} hourly rows (built in ${fmt(built.seconds, 1)} s)`);
  console.log(`  start-up to first 200 (retention backlog due): ${fmt(row.startupMs)} ms; /trends first page cold ${fmt(row.trendsColdMs, 1)} ms`);
  console.log(`  first retention pass: ${row.retention}`);
  for (const [name, l] of Object.entries(loads)) {
    const bad = l.non2xx + l.errors > 0 ? ` (${l.non2xx} non-2xx, ${l.errors} errors)` : '';
    console.log(`  ${name.padEnd(12)} ${fmt(l.rps).padStart(7)} req/s  p50 ${fmt(l.p50, 1).padStart(6)} ms  p99 ${fmt(l.p99, 1).padStart(6)} ms  longest stall ${fmt(stalls[name] ?? NaN, 1)} ms${bad}`);
  }
  console.log(`  longest stall from the first 200 through the first retention pass ${fmt(stalls.retention ?? NaN, 1)} ms; worst of all ${fmt(worstStall, 1)} ms (target < 50)`);
  const rssRatio = baseline ? ` = ${fmt(row.rss / baseline.rss, 2)}× S0's (target ≤ 1.2×)` : '';
  console.log(`  RSS after the loads, 10 s idle: ${fmt(row.rss / MIB)} MiB${rssRatio}; high-water mark ${fmt(row.hwm / MIB)} MiB`);
  console.log(`  database: ${fmt(row.bytes / MIB)} MiB = ${fmt(row.bytes / built.checks, 1)} B per check of history, ${fmt(row.bytes / (built.rawRows + built.hourRows), 1)} B per row`);
  const trends = loads.trends;
  const history = loads['history 30d'];
  if (trends && history) console.log(`  targets: /trends p99 ${fmt(trends.p99, 1)} ms (≤ 20), /history 30 d p99 ${fmt(history.p99, 1)} ms (≤ 20), start-up ${fmt(row.startupMs)} ms (< 3,000)`);
}

async function postgresDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const admin = process.env.OBSERVER_TEST_POSTGRES_URL;
  if (!admin) throw new Error('OBSERVER_TEST_POSTGRES_URL is not set: run through npm run bench');
  const name = `observer_scale_${Date.now()}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

async function postgresBytes(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return Number((await client.query('SELECT pg_database_size(current_database()) AS n')).rows[0].n);
  } finally {
    await client.end();
  }
}

async function migrationTiming(dir: string): Promise<void> {
  const spec = { name: 'S2', servers: 10_000, days: 3 };
  const path = join(dir, 'legacy.db');
  const checks = await buildLegacySqlite(path, spec, Date.now());
  const before = sqliteBytes(path);
  const started = performance.now();
  const store = await openStore({ database: { kind: 'sqlite', path }, checkRetentionDays: 2 });
  const ms = performance.now() - started;
  await store.close();
  console.log(`\nMigration 0003 on an S2-size database in the previous layout (${fmt(checks)} checks, ${fmt(before / MIB)} MiB): ${fmt(ms / 1000, 1)} s; ${fmt(sqliteBytes(path) / MIB)} MiB after`);
}

console.log(`Scale bench, ${new Date().toISOString()}, ${readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/)?.[1] ?? 'cpu'} × ${readdirSync('/sys/devices/system/cpu').filter((d) => /^cpu\d+$/.test(d)).length}, Node ${process.version}`);
const rows: Row[] = [];
for (const spec of SQLITE_SCALES.filter((s) => wanted.includes(s.name))) {
  const dir = mkdtempSync(join(tmpdir(), `observer-scale-${spec.name}-`));
  try {
    const path = join(dir, 'observer.db');
    const built = await buildSqlite(path, spec, Date.now());
    const row = await measureScale(spec, 'SQLite', `sqlite:${path}`, dir, built, () => sqliteBytes(path));
    rows.push(row);
    printRow(row, rows.find((r) => r.spec.name === 'S0' && r !== row));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
if (wanted.includes('P')) {
  const database = await postgresDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'observer-scale-P-'));
  try {
    const built = await buildPostgres(database.url, PG_SCALE, Date.now());
    const bytes = await postgresBytes(database.url);
    const row = await measureScale(PG_SCALE, 'PostgreSQL', database.url, dir, built, () => bytes);
    printRow(row, rows.find((r) => r.spec.name === 'S0'));
    const full = 100_000 * 30 * 288;
    if (built.checks < full) console.log(`  at 100,000 servers × 30 days: about ${fmt((bytes / built.checks) * full / 1024 ** 3, 1)} GiB, by bytes per check`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await database.drop();
  }
}
if (wanted.includes('retention')) {
  const dir = mkdtempSync(join(tmpdir(), 'observer-scale-retention-'));
  try {
    await retentionOverDays(join(dir, 'observer.db'), 1_000, 40);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
if (wanted.includes('migration')) {
  const dir = mkdtempSync(join(tmpdir(), 'observer-scale-migration-'));
  try {
    await migrationTiming(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
