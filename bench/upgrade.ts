/**
 * An upgrade from the previous layout: `npm run bench -- upgrade`.
 *
 * Builds SQLite databases as the version before migration 0003 left them (every check raw, one
 * row each with its text id; the old migrations applied by the real migrator, then the rows
 * written by the database itself), U1 100,000 servers × 1 day and U2 1,000 servers × 30 days,
 * every server checked every 5 minutes, then starts the service on each as `npm start` runs it
 * (built, in its own process, default settings but for the database) and measures from other
 * processes:
 *
 *  - the time from the spawn to the first status answer (health, 200; target ≤ 3 s), against the
 *    same on an empty database (the baseline: the process's own start);
 *  - the migration's duration (health's `migration` field until it is null), and per million checks;
 *  - the peak RSS while it runs (sampled every 50 ms, and the process's high-water mark) against
 *    the steady RSS (the upgraded service idle for 10 s; target: peak ≤ 2× steady);
 *  - the longest event-loop stall while it runs: the slowest answer of a health probe every
 *    5 ms (bench/scale/probe.mjs; health does no work of its own), and the service's own
 *    measure, `nodejs_eventloop_lag_max_seconds` of /metrics, scraped as the migration starts
 *    and as it ends (each scrape starts the next maximum) (target ≤ 50 ms). Both count the time
 *    the main thread waited for a core as a stall: on a busy machine, compare them with the
 *    idle service's.
 *
 * BENCH_UPGRADE_SCALE (default 1) divides the servers of both sizes (e.g. 10 for a quick run);
 * BENCH_UPGRADE_SIZES=U1 (or U2) runs one size only.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildLegacySqlite, type ScaleSpec } from './scale/data.js';
import { freePort } from '../scripts/ports.mjs';
import { fmt, rssOf, serviceEnv, startCommand, summarise } from './support.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const MIB = 1024 * 1024;
const SCALE = Math.max(1, Number(process.env.BENCH_UPGRADE_SCALE ?? 1));
const SIZES: ScaleSpec[] = [
  { name: 'U1', servers: Math.round(100_000 / SCALE), days: 1 },
  { name: 'U2', servers: Math.round(1_000 / SCALE), days: 30 },
].filter((spec) => (process.env.BENCH_UPGRADE_SIZES ?? 'U1,U2').split(',').includes(spec.name));

/** The process's high-water mark of resident memory (Linux /proc), bytes. */
function peakRssOf(pid: number | undefined): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : NaN;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const METRICS_TOKEN = 'bench-upgrade-metrics-token';

/** The service's longest event-loop delay since the last scrape, ms. */
async function loopLagMax(base: string): Promise<number> {
  const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const match = /^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(await res.text());
  return match ? Number(match[1]) * 1000 : NaN;
}

async function health(base: string): Promise<{ migration?: { name: string; progress: number } | null } | null> {
  try {
    const res = await fetch(`${base}/api/v1/status`);
    return res.ok ? ((await res.json()) as { migration?: { name: string; progress: number } | null }) : null;
  } catch {
    return null;
  }
}

/** The health probe of bench/scale.ts, in a process of its own: its slowest answer in each phase. */
async function probeMax(probe: ChildProcess): Promise<Record<string, number>> {
  const report = await new Promise<{ phases: Record<string, { max: number; n: number }> }>((resolve) => {
    probe.once('message', (message) => resolve(message as { phases: Record<string, { max: number; n: number }> }));
    probe.send({ report: true });
  });
  probe.send({ stop: true });
  return Object.fromEntries(Object.entries(report.phases).map(([phase, { max }]) => [phase, max]));
}

/** Spawns the service as `npm start` runs it on the database in `dir`; resolves at its first health answer, with the time it took. */
async function startService(dir: string, port: number): Promise<{ child: ChildProcess; firstAnswer: number; first: NonNullable<Awaited<ReturnType<typeof health>>> }> {
  const base = `http://127.0.0.1:${port}`;
  const [command, args] = startCommand(ROOT);
  const started = performance.now();
  const child = spawn(command, args, { env: serviceEnv(port, dir, { LOG_LEVEL: 'warn', METRICS_TOKEN }), stdio: ['ignore', 'ignore', 'inherit'] });
  for (;;) {
    const first = await health(base);
    if (first !== null) return { child, firstAnswer: performance.now() - started, first };
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}`);
    await sleep(20);
  }
}

async function stopService(child: ChildProcess | null): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** The first answer of a service on an empty database: what the process's start alone takes here. */
async function baselineStart(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'observer-bench-upgrade-'));
  try {
    const { child, firstAnswer } = await startService(dir, await freePort());
    await stopService(child);
    return firstAnswer;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function upgrade(spec: ScaleSpec, baseline: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'observer-bench-upgrade-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  try {
    const built = performance.now();
    const checks = await buildLegacySqlite(join(dir, 'observer.db'), spec, Date.now());
    const bytes = statSync(join(dir, 'observer.db')).size;
    console.log(
      `${spec.name}: ${fmt(spec.servers)} servers × ${spec.days} d, ${fmt(checks)} checks in the previous layout ` +
        `(${fmt(bytes / MIB)} MiB), built in ${fmt((performance.now() - built) / 1000, 1)} s`,
    );

    const service = await startService(dir, port);
    child = service.child;
    const { firstAnswer, first } = service;
    const started = performance.now() - firstAnswer;
    const pid = child.pid;
    const probe = fork(join(ROOT, 'bench/scale/probe.mjs'), [`${base}/api/v1/status`], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    probe.send({ phase: 'migration' });
    await loopLagMax(base);
    let peak = rssOf(pid);
    let peakAt = 'start';
    let progressSeen = 0;
    for (let state: Awaited<ReturnType<typeof health>> = first; state?.migration !== null; state = await health(base)) {
      if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode} while migrating`);
      if (state?.migration) progressSeen = Math.max(progressSeen, state.migration.progress);
      const rss = rssOf(pid);
      if (rss > peak) [peak, peakAt] = [rss, state?.migration ? `${state.migration.name} at ${fmt(state.migration.progress * 100)} %` : 'between answers'];
      await sleep(50);
    }
    const migration = performance.now() - started - firstAnswer;
    const lagMigrating = await loopLagMax(base);
    const highWater = peakRssOf(pid);
    // Steady: the upgraded service, idle for 10 s; the probe's slowest answer then is the machine's own noise.
    probe.send({ phase: 'idle' });
    await sleep(10_000);
    const lagIdle = await loopLagMax(base);
    const steady = rssOf(pid);
    const stalls = await probeMax(probe);
    const stall = stalls.migration ?? NaN;
    const perMillion = migration / 1000 / (checks / 1e6);
    console.log(`  first status answer ${fmt(firstAnswer)} ms after the spawn (target ≤ 3000 ms; on an empty database ${fmt(baseline)} ms)`);
    console.log(`  migration ${fmt(migration / 1000, 1)} s (${fmt(perMillion, 1)} s per million checks; progress reported up to ${fmt(progressSeen * 100)} %)`);
    console.log(
      `  RSS: peak while migrating ${fmt(peak / MIB)} MiB sampled (${peakAt}), ${fmt(highWater / MIB)} MiB high-water mark; steady ${fmt(steady / MIB)} MiB: ` +
        `${fmt(Math.max(peak, highWater) / steady, 2)}× (target ≤ 2×)`,
    );
    console.log(
      `  longest event-loop stall while migrating (target ≤ 50 ms): slowest health answer ${fmt(stall, 1)} ms, ` +
        `the service's loop delay ${fmt(lagMigrating, 1)} ms; idle afterwards, for comparison: ${fmt(stalls.idle ?? NaN, 1)} ms and ${fmt(lagIdle, 1)} ms`,
    );
    summarise(
      `upgrade ${spec.name} (${fmt(spec.servers)} × ${spec.days} d, ${fmt(checks)} checks): first answer ${fmt(firstAnswer)} ms, ` +
        `migration ${fmt(migration / 1000, 1)} s (${fmt(perMillion, 1)} s/M checks), peak RSS ${fmt(Math.max(peak, highWater) / steady, 2)}× steady, ` +
        `stall ${fmt(stall, 1)} ms (loop delay ${fmt(lagMigrating, 1)} ms; idle ${fmt(stalls.idle ?? NaN, 1)} / ${fmt(lagIdle, 1)} ms)`,
    );
  } finally {
    await stopService(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

if (SCALE !== 1) console.log(`BENCH_UPGRADE_SCALE=${SCALE}: ${SIZES.map((s) => `${s.name} ${fmt(s.servers)} × ${s.days} d`).join(', ')}`);
const baseline = await baselineStart();
console.log(`baseline: first status answer on an empty database ${fmt(baseline)} ms after the spawn`);
for (const spec of SIZES) await upgrade(spec, baseline);
