/**
 * An upgrade from the previous layout: `npm run bench -- upgrade`.
 *
 * Builds SQLite databases as the version before migration 0003 left them
 * (test/store/upgrade-fixture.ts: the old migrations applied by the real migrator, one row per
 * check in the order the checks were made, every server's interleaved with all the others',
 * shared out heavy-tailed: a few servers checked every minute, most rarely), U1 100,000
 * servers × 1 day (28.8 M checks) and U2 1,000 servers × 30 days (8.64 M), then starts the
 * service on each as `npm start` runs it (built, in its own process, default settings but for
 * the database) while another process looks up a new loopback address every 20 ms, and
 * measures from outside:
 *
 *  - the time from the spawn to the first status answer (health, 200; target ≤ 3 s), against the
 *    same on an empty database (the baseline: the process's own start);
 *  - how long /history, /trends and /stats went unanswered (503 `migrating`) during the upgrade,
 *    each asked every 100 ms from the first status answer until the vacuum after the switch
 *    begins (target ≤ 60 s for U1), and their slowest answers; the migration until the switch
 *    to the new tables, and then the work after it (the old tables dropped, the file vacuumed)
 *    in the background;
 *  - the largest step in rows and in ms (the log's `migration step committed`; target: no
 *    writer request over 1 s) and the slowest group commit after the switch (the writer's
 *    histogram in /metrics);
 *  - the look-ups answered during the upgrade, and how many of them /history holds once it is
 *    done (all: they were held, not lost);
 *  - the peak RSS while it runs against the steady RSS (the upgraded service idle for 10 s),
 *    and the slowest answer of a health probe every 5 ms (bench/scale/probe.mjs);
 *  - then the service is killed (SIGKILL) during the VACUUM and started again: its first
 *    status and history answers (target ≤ 3 s), and how long the VACUUM done again takes.
 *
 * BENCH_UPGRADE_SCALE (default 1) divides the servers of both sizes (e.g. 10 for a quick run);
 * BENCH_UPGRADE_SIZES=U1 (or U2) runs one size only. Building U1 takes minutes: each database is
 * kept in ~/.cache/observer/upgrade-fixtures, named by its size and the fixture's code, and
 * copied for each run while it is less than a day old (its history ends when it was built).
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../scripts/ports.mjs';
import { buildDatabase, fixtureAddress, fixtureChecks, MIGRATION_NAMES, type HistoryShape } from '../test/store/upgrade-fixture.js';
import { fmt, rssOf, serviceEnv, startCommand, seconds, storedDataLine, storedDataWatch, summarise } from './support.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const MIB = 1024 * 1024;
const MINUTE = 60_000;
const SCALE = Math.max(1, Number(process.env.BENCH_UPGRADE_SCALE ?? 1));
/** Every server checked every 5 minutes on average. */
const SIZES = [
  { name: 'U1', servers: Math.round(100_000 / SCALE), days: 1 },
  { name: 'U2', servers: Math.round(1_000 / SCALE), days: 30 },
].filter((spec) => (process.env.BENCH_UPGRADE_SIZES ?? 'U1,U2').split(',').includes(spec.name));
type Spec = (typeof SIZES)[number];
const METRICS_TOKEN = 'bench-upgrade-metrics-token';
/** A look-up of a new loopback address this often while the upgrade runs. */
const LOOKUP_EVERY_MS = 20;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The process's high-water mark of resident memory (Linux /proc), bytes. */
function peakRssOf(pid: number | undefined): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : NaN;
}

interface Service {
  child: ChildProcess;
  base: string;
  spawned: number;
  /** Log lines so far, parsed. */
  log: Array<Record<string, unknown>>;
  exited: Promise<void>;
}

/** Spawns the service as `npm start` runs it on the database in `dir`, its log (debug) read as it comes. */
function spawnService(dir: string, port: number): Service {
  const [command, args] = startCommand(ROOT);
  const spawned = performance.now();
  const child = spawn(command, args, { env: serviceEnv(port, dir, {
      LOG_LEVEL: 'debug',
      METRICS_TOKEN,
      ICMP: 'off',
      // One client looks up a new server every 20 ms and then asks for each one's history: no limit of a client may refuse it.
      RATE_LIMIT_GENERAL: '10000000',
      RATE_LIMIT_STATUS: '10000000',
      NEW_SERVERS_PER_CLIENT_PER_DAY: '1000000',
      TARGET_PINGS_PER_MINUTE: '100000',
    }), stdio: ['ignore', 'pipe', 'inherit'] });
  const log: Array<Record<string, unknown>> = [];
  let pending = '';
  child.stdout!.on('data', (data: Buffer) => {
    const lines = (pending + data.toString()).split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      try {
        log.push({ ...(JSON.parse(line) as Record<string, unknown>), at: performance.now() });
      } catch {
        // not a log line
      }
    }
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, base: `http://127.0.0.1:${port}`, spawned, log, exited };
}

async function get(service: Service, path: string): Promise<{ status: number; body: Record<string, unknown> } | null> {
  try {
    const res = await fetch(`${service.base}${path}`);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  } catch {
    return null;
  }
}

/** Polls `path` until it answers `status`; the time from the spawn, ms. */
async function answered(service: Service, path: string, status = 200): Promise<number> {
  for (;;) {
    if (service.child.exitCode !== null) throw new Error(`the service exited with ${service.child.exitCode}`);
    if ((await get(service, path))?.status === status) return performance.now() - service.spawned;
    await sleep(20);
  }
}

/** The stored-data routes a watcher asks during the upgrade. */
const STORED = { history: `/api/v1/history/${fixtureAddress(0)}`, trends: '/api/v1/trends?limit=10', stats: '/api/v1/stats' };

/** Resolves once health says no migration runs (and no work after one). */
async function upgraded(service: Service, each: () => void = () => {}): Promise<number> {
  for (;;) {
    if (service.child.exitCode !== null) throw new Error(`the service exited with ${service.child.exitCode}`);
    const health = await get(service, '/api/v1/status');
    if (health?.status === 200 && health.body.migration === null) return performance.now() - service.spawned;
    each();
    await sleep(50);
  }
}

async function stopService(service: Service | null): Promise<void> {
  if (!service || service.child.exitCode !== null) return;
  service.child.kill('SIGTERM');
  await service.exited;
}

/** Uncached look-ups, one at a time, a new loopback port each (answered offline at once, and recorded); the ports answered. */
function lookups(service: Service, firstPort: number) {
  const ports: number[] = [];
  let stopped = false;
  const running = (async () => {
    for (let port = firstPort; !stopped; port++) {
      const started = performance.now();
      const res = await get(service, `/api/v1/status/127.0.0.1:${port}`);
      if (res?.status === 200) ports.push(port);
      await sleep(Math.max(0, LOOKUP_EVERY_MS - (performance.now() - started)));
    }
  })();
  return {
    ports,
    stop: async () => {
      stopped = true;
      await running;
    },
  };
}

/** The slowest group commit the writer's histogram holds: the smallest bucket that counts them all (s). */
async function slowestBatch(service: Service): Promise<number> {
  const res = await fetch(`${service.base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const text = await res.text();
  const buckets = [...text.matchAll(/^observer_sqlite_writer_duration_seconds_bucket\{(?=[^}]*work="batch")[^}]*le="([^"]+)"[^}]*\} (\S+)$/gm)].map((m) => [Number(m[1]), Number(m[2])] as const);
  const total = buckets.at(-1)?.[1] ?? 0;
  return buckets.find(([, count]) => count === total)?.[0] ?? NaN;
}

/** The health probe of bench/scale.ts, in a process of its own: its slowest answer in each phase. */
async function probeMax(probe: ChildProcess): Promise<Record<string, number>> {
  const report = await new Promise<{ phases: Record<string, { max: number }> }>((resolve) => {
    probe.once('message', (message) => resolve(message as { phases: Record<string, { max: number }> }));
    probe.send({ report: true });
  });
  probe.send({ stop: true });
  return Object.fromEntries(Object.entries(report.phases).map(([phase, { max }]) => [phase, max]));
}

/** The first answer of a service on an empty database: what the process's start alone takes here. */
async function baselineStart(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'observer-bench-upgrade-'));
  const service = spawnService(dir, await freePort());
  try {
    return await answered(service, '/api/v1/status');
  } finally {
    await stopService(service);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The steps the log reports: how many, and the largest in rows and in ms. */
function steps(log: Array<Record<string, unknown>>) {
  const copy = log.filter((e) => e.msg === 'migration step committed' && typeof e.rows === 'number');
  const all = log.filter((e) => e.msg === 'migration step committed');
  const longest = all.reduce<Record<string, unknown> | undefined>((a, e) => (a === undefined || Number(e.ms) > Number(a.ms) ? e : a), undefined);
  return {
    count: all.length,
    rows: Math.max(0, ...copy.map((e) => Number(e.rows))),
    ms: Number(longest?.ms ?? 0),
    longest: `${String(longest?.migration)} ${String(longest?.step)}`,
  };
}

/**
 * Once the work after the migration is inside its VACUUM: six of its statements have run
 * (history-layout.ts: the drops of the three old tables, the look at auto_vacuum, temp_store,
 * auto_vacuum), the VACUUM is the seventh.
 */
async function vacuuming(service: Service): Promise<void> {
  while (service.log.filter((e) => e.msg === 'migration statement done' && e.step === 'after').length < 6) {
    if (service.child.exitCode !== null) throw new Error('the service exited before its VACUUM');
    await sleep(20);
  }
}

const FIXTURES = join(homedir(), '.cache/observer/upgrade-fixtures');
const FIXTURE_MAX_AGE_MS = 24 * 60 * MINUTE;

/**
 * Copies the previous-layout database of `spec` from the fixture cache into `dir`, building it
 * there first when it is missing or a day old; how it came, for the log. An entry is a folder
 * holding the database's files (its log too: the fixture's last transactions may be there
 * only), built under another name and renamed, so that a build cut short is never used.
 */
async function copyFixture(spec: Spec, shape: HistoryShape, dir: string): Promise<string> {
  const code = createHash('sha256');
  for (const file of ['test/store/upgrade-fixture.ts', 'test/store/legacy-layout.ts']) code.update(readFileSync(join(ROOT, file)));
  const entry = join(FIXTURES, `${spec.servers}x${spec.days}d-${code.digest('hex').slice(0, 12)}`);
  let age = Infinity;
  try {
    age = Date.now() - statSync(entry).mtimeMs;
  } catch {
    // not built yet
  }
  let how = `kept from ${seconds(age)} ago`;
  if (age >= FIXTURE_MAX_AGE_MS) {
    const building = `${entry}.building`;
    for (const stale of [entry, building]) rmSync(stale, { recursive: true, force: true });
    mkdirSync(building, { recursive: true });
    const started = performance.now();
    await buildDatabase({ kind: 'sqlite', path: join(building, 'observer.db') }, MIGRATION_NAMES.indexOf('0003_history_layout'), shape);
    renameSync(building, entry);
    how = `built in ${seconds(performance.now() - started)}`;
  }
  // The shared-memory index is not part of the database: SQLite makes it again from the log.
  for (const file of readdirSync(entry)) if (!file.endsWith('-shm')) copyFileSync(join(entry, file), join(dir, file));
  return how;
}

async function upgrade(spec: Spec, baseline: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'observer-bench-upgrade-'));
  let service: Service | null = null;
  try {
    const shape: HistoryShape = { servers: spec.servers, checksPerServer: spec.days * 288, intervalMs: 5 * MINUTE, end: Math.floor(Date.now() / MINUTE) * MINUTE - MINUTE, heavyTail: true };
    const how = await copyFixture(spec, shape, dir);
    const checks = fixtureChecks(shape);
    console.log(
      `${spec.name}: ${fmt(spec.servers)} servers × ${spec.days} d, ${fmt(checks)} checks in the previous layout, in time order, heavy-tailed ` +
        `(${fmt(statSync(join(dir, 'observer.db')).size / MIB)} MiB), ${how}`,
    );

    service = spawnService(dir, await freePort());
    const firstAnswer = await answered(service, '/api/v1/status');
    const load = lookups(service, 30_000);
    const probe = fork(join(ROOT, 'bench/scale/probe.mjs'), [`${service.base}/api/v1/status`], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    probe.send({ phase: 'migration' });
    const pid = service.child.pid;
    let peak = rssOf(pid);
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 50);
    const stored = storedDataWatch(service.base, STORED, service.spawned);
    await vacuuming(service);
    const unanswered = await stored.stop();
    clearInterval(sampler);
    const switched = steps(service.log);
    const migration = Number(service.log.find((e) => e.msg === 'migration step committed' && e.step === 'finish')?.at ?? NaN) - service.spawned;
    await load.stop();
    const highWater = peakRssOf(pid);
    const stalls = await probeMax(probe);
    const perMillion = migration / 1000 / (checks / 1e6);
    const peakRss = Math.max(peak, highWater);
    console.log(`  first status answer ${fmt(firstAnswer)} ms after the spawn (target ≤ 3000 ms; on an empty database ${fmt(baseline)} ms)`);
    console.log(`  migration until the switch ${seconds(migration)} (${fmt(perMillion, 1)} s per million checks)`);
    console.log(`  unanswered during the upgrade (target ≤ 60 s for U1): ${storedDataLine(unanswered)}`);
    console.log(`  ${fmt(switched.count)} steps; the largest ${fmt(switched.rows)} rows, the longest ${fmt(switched.ms)} ms (${switched.longest}; target: none over 1000 ms)`);
    console.log(`  peak RSS while migrating ${fmt(peakRss / MIB)} MiB; slowest health answer while migrating ${fmt(stalls.migration ?? NaN, 1)} ms`);
    // Killed inside the VACUUM, then started again: the next start does it again, in the background.
    service.child.kill('SIGKILL');
    await service.exited;
    service = spawnService(dir, await freePort());
    const restartAnswer = await answered(service, '/api/v1/status');
    const restartHistory = await answered(service, STORED.history);
    const restartDone = await upgraded(service);
    let kept = 0;
    for (const port of load.ports) if ((await get(service, `/api/v1/history/127.0.0.1:${port}`))?.status === 200) kept += 1;
    const batch = await slowestBatch(service);
    await sleep(10_000);
    const steady = rssOf(service.child.pid);

    console.log(`  group commits after the switch within ${fmt(batch * 1000)} ms`);
    console.log(`  look-ups answered during the upgrade: ${fmt(load.ports.length)}; in /history afterwards: ${fmt(kept)}`);
    console.log(
      `  killed inside the VACUUM and started again: first status answer ${fmt(restartAnswer)} ms, first history answer ${fmt(restartHistory)} ms (targets ≤ 3000 ms); ` +
        `the VACUUM done again within ${seconds(restartDone - restartHistory)}`,
    );
    console.log(`  RSS: peak while migrating ${fmt(peakRss / MIB)} MiB, steady ${fmt(steady / MIB)} MiB (${fmt(peakRss / steady, 2)}×)`);
    summarise(
      `upgrade ${spec.name} (${fmt(spec.servers)} × ${spec.days} d, ${fmt(checks)} checks, heavy-tailed, in time order): first answer ${fmt(firstAnswer)} ms, ` +
        `history unanswered ${seconds(unanswered.history.unanswered)} (migration ${seconds(migration)}, ${fmt(perMillion, 1)} s/M checks), largest step ${fmt(switched.rows)} rows / ${fmt(switched.ms)} ms, ` +
        `look-ups kept ${fmt(kept)}/${fmt(load.ports.length)}, after a kill in the VACUUM history in ${fmt(restartHistory)} ms, peak RSS ${fmt(peakRss / steady, 2)}× steady`,
    );
  } finally {
    await stopService(service);
    rmSync(dir, { recursive: true, force: true });
  }
}

if (SCALE !== 1) console.log(`BENCH_UPGRADE_SCALE=${SCALE}: ${SIZES.map((s) => `${s.name} ${fmt(s.servers)} × ${s.days} d`).join(', ')}`);
const baseline = await baselineStart();
console.log(`baseline: first status answer on an empty database ${fmt(baseline)} ms after the spawn`);
for (const spec of SIZES) await upgrade(spec, baseline);
