/**
 * An upgrade on PostgreSQL as instances sharing the database meet it: `npm run bench -- postgres-migration`.
 *
 * A PostgreSQL server of its own (initdb in a temporary directory, fsync on, as a real server
 * runs), holding a history in the layout before migration 0003 (the first two migrations
 * applied by the real runner, then every check raw, written in time order with every server
 * interleaved, as an instance writes them): 400 servers checked every 5 minutes for 30 days
 * (3.5 million checks). Each part runs on a copy of it (CREATE DATABASE … TEMPLATE), the service
 * as `npm start` runs it (built, in processes of its own):
 *
 *  - baseline: the upgrade as the previous release ran it, 0003 in one transaction (its
 *    statements, kept here), then the migrations after it;
 *  - one instance: the upgrade in steps; its length, its steps (how many, the longest, from
 *    the log's `migration step committed`), health answers meanwhile and idle after (a probe
 *    every 5 ms, bench/scale/probe.mjs) beside the service's own longest event-loop delay
 *    (`nodejs_eventloop_lag_max_seconds`), how long /history, /trends and /stats (each asked
 *    every 100 ms) went unanswered, the WAL it wrote against the baseline's;
 *  - two instances: A upgrades, B starts once A is 20 % in and waits; A gets SIGTERM at 50 %:
 *    how long A takes to exit and with which code, how long until B commits its first step,
 *    the whole upgrade's length against one instance's, B's slowest health answer and its
 *    answers that were not 200 (none expected), and whether B exited (it must not);
 *  - a stop in one long statement: a build with one more migration that sleeps 60 s in one
 *    statement (test/support/test-migration.mjs, preloaded), SIGTERM 3 s in: how long until exit.
 *
 * BENCH_PG_MIGRATION_SCALE (default 1) divides the servers (e.g. 10 for a quick run).
 * Loopback only.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { freePort } from '../scripts/ports.mjs';
import { MigrationRunner } from '../src/store/migrations/migration-runner.js';
import { observerMigrations } from '../src/store/migrations/migrations.js';
import { ensurePartitions } from '../src/store/postgres/partitions.js';
import { APPENDED_MIGRATION_NAME, appendedMigrationEnv } from '../test/support/appended-migration.js';
import { startPrivatePostgres } from '../test/support/private-postgres.js';
import { serverId } from '../src/status/server-id.js';
import { fmt, serviceEnv, startCommand, storedDataLine, storedDataWatch, summarise } from './support.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SCALE = Math.max(1, Number(process.env.BENCH_PG_MIGRATION_SCALE ?? 1));
const SERVERS = Math.round(400 / SCALE);
const DAYS = 30;
const INTERVAL_MS = 5 * 60_000;
const DAY_MS = 24 * 3_600_000;
const CHECKS_PER_SERVER = (DAYS * DAY_MS) / INTERVAL_MS;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function withDb<T>(url: string, work: (db: Kysely<unknown>) => Promise<T>): Promise<T> {
  const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 1 }) }) });
  try {
    return await work(db);
  } finally {
    await db.destroy();
  }
}

const urlOf = (server: string, name: string) => Object.assign(new URL(server), { pathname: `/${name}` }).toString();

/** The server whose history the bench asks for during the upgrade. */
const WATCHED = { address: 'srv-0.example:25565', id: serverId('java', 'srv-0.example', 25565) };
/** The stored-data routes asked during the upgrade. */
const STORED = { history: `/api/v1/history/${WATCHED.address}`, trends: '/api/v1/trends?limit=10', stats: '/api/v1/stats' };

/** The previous layout, its checks written in time order with every server interleaved. */
async function buildLegacy(url: string): Promise<number> {
  const end = Math.floor(Date.now() / 60_000) * 60_000 - 60_000;
  // Ids shaped as the service's (UUIDs: /trends hands one out as its cursor); the first one is
  // the id the service gives srv-0.example:25565, whose history the bench asks for.
  const id = sql`CASE WHEN i = 0 THEN ${WATCHED.id} ELSE md5('srv-' || i)::uuid::text END`;
  return withDb(url, async (db) => {
    await new MigrationRunner(db, 'postgres', observerMigrations('postgres')).run('0002_watches');
    await sql`SET statement_timeout = 0`.execute(db);
    await sql`INSERT INTO servers (id, edition, host, port, first_seen, last_seen, record_players, last_online, players_online, players_max, clients_24h, trend_score)
      SELECT ${id}, 'java', 'srv-' || i || '.example', 25565, ${end - (CHECKS_PER_SERVER - 1) * INTERVAL_MS}::bigint, ${end}::bigint, 49, 1, i % 50, 100, 0, i
      FROM generate_series(0, ${SERVERS - 1}) AS i`.execute(db);
    await sql`INSERT INTO checks (server_id, checked_at, online, players_online, players_max, latency_ms, version)
      SELECT ${id}, ${end}::bigint - n * ${INTERVAL_MS}::bigint, CASE WHEN (n + i) % 7 = 0 THEN 0 ELSE 1 END,
        CASE WHEN (n + i) % 7 = 0 THEN NULL ELSE (n + i) % 50 END, 100, 12.5, '1.21.4'
      FROM generate_series(${CHECKS_PER_SERVER - 1}, 0, -1) AS n CROSS JOIN generate_series(0, ${SERVERS - 1}) AS i ORDER BY n DESC, i`.execute(db);
    await sql`VACUUM ANALYZE`.execute(db);
    return SERVERS * CHECKS_PER_SERVER;
  });
}

/** WAL written (bytes, and full-page images in it) and time taken (ms) by `work` on the server. */
async function measured(server: string, work: () => Promise<void>): Promise<{ ms: number; wal: number; fpi: number }> {
  const wal = () =>
    withDb(server, async (db) => {
      const { rows } = await sql<{ bytes: string; fpi: string }>`SELECT wal_bytes::text AS bytes, wal_fpi::text AS fpi FROM pg_stat_wal`.execute(db);
      return { bytes: Number(rows[0]!.bytes), fpi: Number(rows[0]!.fpi) };
    });
  // Both sides start from a checkpoint: a page's first change after one is logged whole.
  await withDb(server, (db) => sql`CHECKPOINT`.execute(db));
  const before = await wal();
  const started = performance.now();
  await work();
  const ms = performance.now() - started;
  const after = await wal();
  return { ms, wal: after.bytes - before.bytes, fpi: after.fpi - before.fpi };
}

/** The previous release's rewrite of 0003, kept here as the baseline: one transaction. */
async function oneTransaction(url: string): Promise<void> {
  const today = Math.floor(Date.now() / DAY_MS);
  const rollup = `SELECT server, CAST(checked_at / 3600000 AS INTEGER) AS hour, count(*), sum(online),
      sum(CASE WHEN online = 1 AND players_online IS NOT NULL THEN 1 ELSE 0 END),
      coalesce(sum(CASE WHEN online = 1 THEN players_online END), 0), max(CASE WHEN online = 1 THEN players_online END)
    FROM checks GROUP BY 1, 2`;
  await withDb(url, (db) =>
    db.transaction().execute(async (trx) => {
      for (const statement of [
        'SET LOCAL statement_timeout = 0',
        'ALTER TABLE servers ADD COLUMN sid integer GENERATED BY DEFAULT AS IDENTITY',
        'CREATE UNIQUE INDEX servers_sid ON servers (sid)',
        'ALTER TABLE checks RENAME TO checks_v1',
        `CREATE TABLE checks (server integer NOT NULL, checked_at bigint NOT NULL, online smallint NOT NULL, players_online integer,
          players_max integer, latency_ms integer, PRIMARY KEY (server, checked_at) INCLUDE (online, players_online)) PARTITION BY RANGE (checked_at)`,
        'CREATE TABLE checks_default PARTITION OF checks DEFAULT',
        `CREATE TABLE check_hours (server integer NOT NULL, hour integer NOT NULL, checks integer NOT NULL, online integer NOT NULL,
          players_n integer NOT NULL, players_sum bigint NOT NULL, players_peak integer,
          PRIMARY KEY (server, hour) INCLUDE (checks, online, players_n, players_sum, players_peak)) PARTITION BY RANGE (hour)`,
        'CREATE TABLE check_hours_default PARTITION OF check_hours DEFAULT',
        () => ensurePartitions(trx, today - DAYS - 1, today + 2, ['checks', 'check_hours']),
        `INSERT INTO checks SELECT s.sid, c.checked_at, c.online, c.players_online, c.players_max, round(c.latency_ms)
          FROM checks_v1 c JOIN servers s ON s.id = c.server_id ON CONFLICT DO NOTHING`,
        `INSERT INTO check_hours ${rollup}`,
        'DROP TABLE checks_v1',
        'ANALYZE servers',
        'ANALYZE checks',
        'ANALYZE check_hours',
        `INSERT INTO kysely_migration (name, timestamp) VALUES ('0003_history_layout', '${new Date().toISOString()}')`,
      ])
        await (typeof statement === 'string' ? sql.raw(statement).execute(trx) : statement());
    }),
  );
}

/** The upgrade as the previous release ran it: 0003 in one transaction, then the migrations after it. */
async function previousUpgrade(url: string): Promise<void> {
  await oneTransaction(url);
  await withDb(url, (db) => new MigrationRunner(db, 'postgres', observerMigrations('postgres')).run());
}

interface Service {
  child: ChildProcess;
  base: string;
  /** When it was spawned (ms, this process's clock). */
  spawned: number;
  exited: Promise<number | null>;
  /** `migration step committed` lines: when (ms, this process's clock), the migration, the step. */
  commits: Array<{ at: number; migration: string; step: string }>;
}

function startService(url: string, env: Record<string, string> = {}): Promise<Service> {
  return freePort().then((port) => {
    const [command, args] = startCommand(ROOT);
    // The start script runs dist/main.js of its working directory.
    const child = spawn(command, args, {
      cwd: ROOT,
      // The stored-data routes are asked 30 times a second from one address: no rate limit in the way.
      env: serviceEnv(port, '/nonexistent', {
        DATABASE_URL: url,
        LOG_LEVEL: 'info',
        ICMP: 'off',
        REFRESH_PINGS_PER_MINUTE: '0',
        METRICS_TOKEN,
        RATE_LIMIT_GENERAL: '10000000',
        ...env,
      }),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const service: Service = { child, base: `http://127.0.0.1:${port}`, spawned: performance.now(), exited: new Promise((resolve) => child.once('exit', resolve)), commits: [] };
    let pending = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      const lines = (pending + chunk.toString()).split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        if (!line.includes('migration step committed')) continue;
        const entry = JSON.parse(line) as { migration: string; step: string };
        service.commits.push({ at: performance.now(), migration: entry.migration, step: String(entry.step) });
      }
    });
    return service;
  });
}

type Migration = { name: string; progress: number } | null;

const METRICS_TOKEN = 'bench-postgres-migration-metrics-token';

/** The service's longest event-loop delay since the last scrape, ms: a slow health answer with a short one waited for a core, not for the service. */
async function loopLagMax(service: Service): Promise<number> {
  const res = await fetch(`${service.base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const match = /^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(await res.text());
  return match ? Number(match[1]) * 1000 : NaN;
}

/** Health's `migration` (undefined: no answer, or not 200). */
async function migrationOf(service: Service): Promise<Migration | undefined> {
  try {
    const res = await fetch(`${service.base}/api/v1/status`);
    return res.ok ? ((await res.json()) as { migration: Migration }).migration : undefined;
  } catch {
    return undefined;
  }
}

async function until(service: Service, test: (migration: Migration | undefined) => boolean): Promise<void> {
  for (;;) {
    if (service.child.exitCode !== null) throw new Error(`the service exited with ${service.child.exitCode}`);
    if (test(await migrationOf(service))) return;
    await sleep(50);
  }
}

const rewriting = (at: number) => (m: Migration | undefined) => m?.name === '0003_history_layout' && m.progress >= at;
const finished = (m: Migration | undefined) => m === null;

type Latencies = { n: number; p99: number; max: number };

/** A health probe of `service` in a process of its own, by phase (`migrating` first): answers, p99, the slowest. */
function probe(service: Service) {
  const child = fork(join(ROOT, 'bench/scale/probe.mjs'), [`${service.base}/api/v1/status`], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  child.send({ phase: 'migrating' });
  return {
    phase: (name: string) => child.send({ phase: name }),
    end: async (): Promise<Record<string, Latencies>> => {
      const report = await new Promise<{ phases: Record<string, Latencies> }>((resolve) => {
        child.once('message', (message) => resolve(message as { phases: Record<string, Latencies> }));
        child.send({ report: true });
      });
      child.send({ stop: true });
      return report.phases;
    },
  };
}

async function stopped(service: Service): Promise<{ ms: number; code: number | null }> {
  const started = performance.now();
  service.child.kill('SIGTERM');
  const code = await service.exited;
  return { ms: performance.now() - started, code };
}

/** The copy steps of 0003 in a service's log: how many, and the longest (from one commit to the next). */
function copySteps(service: Service): { count: number; longest: number } {
  const commits = service.commits.filter((c) => c.migration === '0003_history_layout');
  let longest = 0;
  for (let i = 1; i < commits.length; i++) if (/^\d+$/.test(commits[i]!.step)) longest = Math.max(longest, commits[i]!.at - commits[i - 1]!.at);
  return { count: commits.filter((c) => /^\d+$/.test(c.step)).length, longest };
}

async function oneInstance(url: string): Promise<number> {
  const service = await startService(url);
  try {
    await until(service, (m) => m !== undefined);
    const report = probe(service);
    const stored = storedDataWatch(service.base, STORED, service.spawned);
    await loopLagMax(service);
    const started = performance.now();
    await until(service, finished);
    const ms = performance.now() - started;
    const unanswered = await stored.stop();
    const lagMigrating = await loopLagMax(service);
    // The same probe with the service idle: what this machine's load alone makes of it.
    report.phase('idle');
    await sleep(10_000);
    const lagIdle = await loopLagMax(service);
    const none = { n: 0, p99: NaN, max: NaN };
    const { migrating = none, idle = none } = await report.end();
    const steps = copySteps(service);
    console.log(`  one instance: upgrade ${fmt(ms / 1000, 1)} s, ${steps.count} copy steps, the longest ${fmt(steps.longest)} ms`);
    console.log(`    unanswered during the upgrade: ${storedDataLine(unanswered)}`);
    console.log(
      `    health while migrating: p99 ${fmt(migrating.p99, 1)} ms, slowest ${fmt(migrating.max, 1)} ms (${fmt(migrating.n)} answers), the service's loop delay at most ${fmt(lagMigrating, 1)} ms; ` +
        `idle after: p99 ${fmt(idle.p99, 1)} ms, slowest ${fmt(idle.max, 1)} ms, loop delay ${fmt(lagIdle, 1)} ms`,
    );
    return ms;
  } finally {
    await stopped(service);
  }
}

async function twoInstances(url: string, alone: number): Promise<void> {
  const a = await startService(url);
  let b: Service | null = null;
  try {
    await until(a, rewriting(0));
    const started = performance.now();
    await until(a, rewriting(0.2));
    b = await startService(url);
    await until(b, (m) => m !== undefined);
    const report = probe(b);
    await until(a, rewriting(0.5));
    const stop = await stopped(a);
    const exitedAt = performance.now();
    await until(b, (m) => m === null || b!.commits.length > 0);
    const takeover = (b.commits[0]?.at ?? performance.now()) - exitedAt;
    await until(b, finished);
    const whole = performance.now() - started;
    const { n, max } = (await report.end()).migrating ?? { n: 0, max: NaN };
    const alive = b.child.exitCode === null;
    console.log(
      `  two instances: A stopped at 50 % exited in ${fmt(stop.ms)} ms with code ${stop.code}; B committed its first step ${fmt(takeover)} ms later; ` +
        `the upgrade took ${fmt(whole / 1000, 1)} s (${fmt(whole / alone, 2)}× one instance's); B: ${fmt(n)} health answers, slowest ${fmt(max, 1)} ms, ${alive ? 'never exited' : 'EXITED'}`,
    );
    summarise(`postgres-migration: SIGTERM at 50 % exits in ${fmt(stop.ms)} ms (code ${stop.code}); the waiting instance takes over in ${fmt(takeover)} ms; upgrade ${fmt(whole / alone, 2)}× one instance's`);
  } finally {
    if (b) await stopped(b);
    if (a.child.exitCode === null) await stopped(a);
  }
}

async function longStatement(url: string): Promise<void> {
  const service = await startService(url, appendedMigrationEnv(60));
  try {
    await until(service, (m) => m?.name === APPENDED_MIGRATION_NAME);
    await sleep(3000);
    const stop = await stopped(service);
    console.log(`  a stop in a migration's 60 s statement: exited in ${fmt(stop.ms)} ms with code ${stop.code}`);
    summarise(`postgres-migration: SIGTERM in a 60 s statement exits in ${fmt(stop.ms)} ms (code ${stop.code})`);
  } finally {
    if (service.child.exitCode === null) await stopped(service);
  }
}

const postgres = await startPrivatePostgres({ fsync: true });
try {
  const admin = (text: string) => withDb(postgres.url, (db) => sql.raw(text).execute(db));
  await admin('CREATE DATABASE legacy');
  const building = performance.now();
  const checks = await buildLegacy(urlOf(postgres.url, 'legacy'));
  console.log(`${fmt(SERVERS)} servers × ${DAYS} d, ${fmt(checks)} checks in the previous layout, built in ${fmt((performance.now() - building) / 1000, 1)} s`);
  let copies = 0;
  const copy = async () => {
    const name = `copy_${++copies}`;
    await admin(`CREATE DATABASE ${name} TEMPLATE legacy`);
    return urlOf(postgres.url, name);
  };
  const baseline = await copy();
  const old = await measured(postgres.url, () => previousUpgrade(baseline));
  console.log(`  baseline, the previous release's upgrade (0003 in one transaction): ${fmt(old.ms / 1000, 1)} s, WAL ${fmt(old.wal / 2 ** 20)} MiB (${fmt(old.fpi)} full-page images)`);
  const stepped = await copy();
  let alone = NaN;
  const steps = await measured(postgres.url, async () => {
    alone = await oneInstance(stepped);
  });
  console.log(`  WAL of the upgrade in steps: ${fmt(steps.wal / 2 ** 20)} MiB (${fmt(steps.wal / old.wal, 2)}× the baseline's; ${fmt(steps.fpi)} full-page images)`);
  summarise(`postgres-migration (${fmt(checks)} checks): upgrade ${fmt(alone / 1000, 1)} s in steps, ${fmt(alone / old.ms, 2)}× the previous release's ${fmt(old.ms / 1000, 1)} s`);
  await twoInstances(await copy(), alone);
  await longStatement(await copy());
} finally {
  postgres.remove();
}
