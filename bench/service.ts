/**
 * Observer as users run it, next to what they would write instead (docs/performance.md).
 *
 *   npm run bench -- service        (or: npx tsx bench/service.ts)
 *
 * Builds the service and starts `node [the start script's flags] dist/main.js` (what `npm start`
 * runs) in its own process, in the default configuration plus only the test network's settings (DNS_SERVERS,
 * TARGET_ALLOWLIST, TRUST_PROXY, rate limits raised out of the way, a temporary SQLite file).
 * Beside it runs bench/baseline/server.mjs (Fastify 5 + minecraft-server-util + lru-cache),
 * and a canned-bytes Java status server (bench/minimal-server.ts) that both ping. Load comes
 * from bench/load-worker.mjs (autocannon) in a child process, one side at a time, in rounds
 * whose first side alternates (Observer, baseline; baseline, Observer; …), each round's two
 * runs compared with each other:
 *   - health          GET /api/v1/status
 *   - cached status   GET /api/v1/status/<one name>:<port>
 *   - uncached status GET /api/v1/status/<n>.any.observer.test:<port>, a new name per request
 *                     (dnsmasq answers every *.any.observer.test with 127.0.0.1)
 * Prints requests/s, p50 and p99 latency, the peak RSS of each service during each phase, the
 * CPU time each service spent per request (robust to a noisy shared machine; it includes what a
 * run left the service to finish, and the next run waits for that), the pings the
 * status server answered, the ratios, and how busy the machine was: the CPU the rest of it
 * (load generator, status server, dnsmasq, kernel) spent per request, and so the CPU per
 * request a service may spend at the target's rate on this machine. All traffic stays on
 * loopback.
 *
 * Per core (comparePerCore below): the same three phases again with each service alone on
 * core 0 and wrk on core 1, medians of rounds and their spread, against targets that depend on
 * the Node line the bench runs on (BENCH_PER_CORE, BENCH_PER_CORE_ROUNDS).
 *
 * Memory: the RSS of both services idle right after start and once settled (BENCH_IDLE_SECONDS,
 * 20 s: V8 gives back the young generation that start-up grew after some seconds without
 * work), after the loads, and the peak. Then Observer runs alone the way docs/container.md
 * runs it small (SMALL_CONTAINER below) inside a 256 MiB cgroup v1 memory group, under the
 * same loads, and the bench prints its failures, whether it survived and what the group used
 * (skipped, with the reason, where no cgroup can be made; BENCH_CGROUP=0 skips it).
 *
 * Environment knobs: BENCH_ROUNDS (4), BENCH_SECONDS (3), BENCH_SKIP_BUILD=1,
 * BENCH_ONLY=<phase name part>, BENCH_OBSERVER_ENV (extra settings, `A=1,B=2`),
 * BENCH_NODE_ARGS (both services' Node flags, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`), BENCH_IDLE_SECONDS, BENCH_CGROUP.
 */
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../scripts/ports.mjs';
import { commandLineOf, hasWrk, median, memoryCgroup, pin, rssOf, serviceEnv, startCommand, summarise, waitForHealth, wrkLoad } from './support.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const DNS = '127.0.0.1:5353';
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 20);
const SETTLE_SECONDS = Number(process.env.BENCH_SETTLE_SECONDS ?? 10);
/** How docs/container.md runs Observer in 256 MiB: the heap's limit (the caches' budget as by default). */
const SMALL_CONTAINER = { limitBytes: 256 * 1024 * 1024, env: { NODE_OPTIONS: '--max-old-space-size=128' } };

interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  total: number;
  loadCpuMs: number;
  statusCodes: Record<string, { count: number }>;
}

interface Side {
  name: string;
  child: ChildProcess;
  base: string;
}

function runLoad(options: { url: string; connections: number; seconds: number; distinct?: string }): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const worker = spawn(process.execPath, [join(ROOT, 'bench/load-worker.mjs'), JSON.stringify(options)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    worker.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    worker.on('error', reject);
    worker.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as LoadResult) : reject(new Error(`load worker exited with ${code}`))));
  });
}

/** Status requests the canned-bytes server has answered so far. */
function pingsAnswered(): Promise<number> {
  return new Promise((resolve) => {
    mcServer.once('message', (message) => resolve((message as { count: number }).count));
    mcServer.send('count');
  });
}

/** CPU time (user + system) a process has used so far, in milliseconds (Linux /proc). */
function cpuMsOf(pid: number | undefined): number {
  try {
    // Fields after the command name (which is in parentheses): utime and stime are 14th and 15th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** CPU time the whole machine has spent busy so far (all cores; idle and iowait excluded), in ms. */
function machineBusyMs(): number {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already inside user and nice)
  const busy = ticks.slice(0, 8).reduce((a, b) => a + b, 0) - ticks[3]! - ticks[4]!;
  return (busy * 1000) / CLOCK_TICKS;
}
const CORES = Number(execFileSync('nproc').toString().trim()) || 1;

/** dnsmasq's pid (the test network's DNS server, scripts/services.sh), for its share of the machine. */
function dnsmasqPid(): number | undefined {
  const runtime = process.env.OBSERVER_TEST_RUNTIME ?? '/tmp/observer-test-services';
  try {
    return Number(readFileSync(join(runtime, 'dnsmasq.pid'), 'utf8').trim()) || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Waits until a process has finished what its last load left it (queued history writes, the
 * collector's work): its CPU over 100 ms under 5 ms, or 3 s. Its CPU meanwhile counts towards
 * the requests that caused it, and the next run, of either side, starts with it quiet.
 */
async function settled(pid: number | undefined): Promise<void> {
  const until = performance.now() + 3000;
  for (let last = cpuMsOf(pid); performance.now() < until; ) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = cpuMsOf(pid);
    // Under 5 ms, or NaN: a process that has exited is quiet too.
    if (!(now - last >= 5)) return;
    last = now;
  }
}

/** cpuMs: the side's CPU for the run and what it left to finish; cpuDuringMs: during the run only. */
type Measured = LoadResult & { peakRss: number; pings: number; cpuMs: number; cpuDuringMs: number; machineMs: number; seconds: number; helpersMs: number };

/**
 * Load on one side while sampling its RSS; returns the load figures, the peak RSS seen and the
 * pings the status server answered meanwhile (proof that uncached requests really pinged).
 */
async function measure(side: Side, run: () => Promise<LoadResult>): Promise<Measured> {
  const pingsBefore = await pingsAnswered();
  const dns = dnsmasqPid();
  const helpers = () => cpuMsOf(mcServer.pid) + (dns === undefined ? 0 : cpuMsOf(dns));
  const helpersBefore = helpers();
  const machineBefore = machineBusyMs();
  const startedAt = performance.now();
  const cpuBefore = cpuMsOf(side.child.pid);
  let peakRss = rssOf(side.child.pid);
  const sampler = setInterval(() => {
    const rss = rssOf(side.child.pid);
    if (rss > peakRss || Number.isNaN(peakRss)) peakRss = rss;
  }, 100);
  try {
    const result = await run();
    const cpuDuringMs = cpuMsOf(side.child.pid) - cpuBefore;
    const machineMs = machineBusyMs() - machineBefore;
    const seconds = (performance.now() - startedAt) / 1000;
    const helpersMs = helpers() - helpersBefore;
    await settled(side.child.pid);
    const cpuMs = cpuMsOf(side.child.pid) - cpuBefore;
    return { ...result, peakRss, pings: (await pingsAnswered()) - pingsBefore, cpuMs, cpuDuringMs, machineMs, seconds, helpersMs };
  } finally {
    clearInterval(sampler);
  }
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const mib = (bytes: number) => `${fmt(bytes / 1024 / 1024)} MiB`;

// 1. Build dist/ as `npm ci` does (its prepare step), so the source measured is the current one,
//    unless told the build is current.
if (process.env.BENCH_SKIP_BUILD !== '1') execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });

// 2. The canned-bytes status server both services ping.
const mcServer = fork(join(ROOT, 'bench/minimal-server.ts'), ['--serve'], { execArgv: process.execArgv, stdio: 'inherit' });
const mcPort = await new Promise<number>((resolve, reject) => {
  mcServer.once('message', (message) => resolve((message as { port: number }).port));
  mcServer.once('exit', (code) => reject(new Error(`minimal server exited with ${code}`)));
});

// 3. Observer, as `npm start` runs it, with only the test network's settings.
const dataDir = mkdtempSync(join(tmpdir(), 'observer-bench-'));
const observerPort = await freePort();
// Rate limits and budgets out of the way; BENCH_OBSERVER_ENV (e.g. 'ICMP=off,LOG_REQUESTS=true') on top.
const observerEnv = serviceEnv(observerPort, dataDir, {
  TRUST_PROXY: 'true',
  RATE_LIMIT_STATUS: '10000000',
  TARGET_PINGS_PER_MINUTE: '100000',
  NEW_SERVERS_PER_CLIENT_PER_DAY: '1000000',
  RATE_LIMIT_GENERAL: '10000000',
  RATE_LIMIT_MEDIA: '10000000',
});
// As `npm start` runs it (scripts/start.sh), with any extra node arguments.
// Node flags for both services (a profile of each, to compare).
const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const [startBin, startArgs] = startCommand(ROOT, nodeArgs);
const observer = spawn(startBin, startArgs, { cwd: ROOT, env: observerEnv, stdio: ['ignore', 'pipe', 'pipe'] });
// What `npm start` does with the logs: they cross a pipe and are read on the other side.
let logLines = 0;
let stderrText = '';
observer.stdout.on('data', (chunk: Buffer) => {
  for (const byte of chunk) if (byte === 0x0a) logLines += 1;
});
observer.stderr.on('data', (chunk: Buffer) => {
  if (stderrText.length < 4000) stderrText += chunk.toString();
});

// 4. The baseline.
const baseline = spawn(process.execPath, [...nodeArgs, join(ROOT, 'bench/baseline/server.mjs')], {
  cwd: ROOT,
  env: { PATH: process.env.PATH ?? '', DNS_SERVERS: DNS, NODE_ENV: 'production', BASELINE_DNS: process.env.BENCH_BASELINE_DNS ?? '' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const baselinePort = await new Promise<number>((resolve, reject) => {
  baseline.stdout.once('data', (chunk: Buffer) => resolve((JSON.parse(chunk.toString()) as { port: number }).port));
  baseline.once('exit', (code) => reject(new Error(`baseline exited with ${code}`)));
});

const sides: Side[] = [
  { name: 'observer', child: observer, base: `http://127.0.0.1:${observerPort}` },
  { name: 'baseline', child: baseline, base: `http://127.0.0.1:${baselinePort}` },
];
const cleanup = () => {
  for (const child of [observer, baseline, mcServer]) if (child.exitCode === null) child.kill('SIGTERM');
  rmSync(dataDir, { recursive: true, force: true });
};
process.on('exit', cleanup);

try {
  await waitForHealth(sides[0]!.base, observer);
} catch (error) {
  process.stderr.write(stderrText);
  throw error;
}
await waitForHealth(sides[1]!.base, baseline);

// Idle: right after start (both answer health), then settled.
const rssNow = () => ({ observer: rssOf(observer.pid), baseline: rssOf(baseline.pid) });
const idleAtStart = rssNow();
await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
const idleSettled = rssNow();

// Both must really answer online from the status server before anything is timed.
const cachedPath = `/api/v1/status/cached.any.observer.test:${mcPort}`;
for (const side of sides) {
  for (const path of [cachedPath, `/api/v1/status/check-${side.name}.any.observer.test:${mcPort}`]) {
    const body = (await (await fetch(side.base + path)).json()) as { online?: boolean; error?: string };
    if (body.online !== true) throw new Error(`${side.name} ${path}: not online (${JSON.stringify(body).slice(0, 300)})`);
  }
}

interface Phase {
  name: string;
  path: string;
  connections: number;
  distinct?: boolean;
}
const phases: Phase[] = [
  { name: 'health', path: '/api/v1/status', connections: 32 },
  { name: 'cached status (one target)', path: cachedPath, connections: 32 },
  { name: 'uncached status (a new name per request)', path: `/api/v1/status/{n}.any.observer.test:${mcPort}`, connections: 64, distinct: true },
].filter((phase) => phase.name.includes(process.env.BENCH_ONLY ?? ''));
// BENCH_PER_CORE=only: the per-core comparison alone (no unpinned phases, memory or cgroup run); 0: without it.
const perCoreOnly = process.env.BENCH_PER_CORE === 'only';
const unpinnedPhases = perCoreOnly ? [] : phases;

console.log(`== Observer (${commandLineOf(observer.pid)}, as npm start runs it; default config) vs baseline (Fastify + minecraft-server-util + lru-cache${process.env.BENCH_BASELINE_DNS === 'observer' ? '; asking SRV, A and AAAA as Observer does' : ''})`);
if (unpinnedPhases.length > 0) {
  console.log(
    `   ${ROUNDS} rounds of ${SECONDS} s per side and phase after a 1 s warm-up, the side that goes first alternating; ` +
      `figures are the mean of the rounds, the ratio the geometric mean of the rounds' own ratios\n`,
  );
}

const results: Record<string, Record<string, Array<Measured>>> = {};
let runId = 0;
const runTag = Date.now().toString(36);
for (const phase of unpinnedPhases) {
  for (const side of sides) {
    const opts = { url: side.base + phase.path, connections: phase.connections, seconds: 1 };
    await runLoad(phase.distinct ? { ...opts, distinct: `w${runTag}${runId++}` } : opts);
  }
  for (let round = 0; round < ROUNDS; round++) {
    // Which side goes first alternates (Observer, baseline; baseline, Observer; ...): a round's
    // two runs are next to each other in time, so a drift of the shared machine's speed, or an
    // edge of going first or second, weighs on both sides alike.
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      // Keep the cached target fresh (a HIT, not STALE) whatever the earlier phases took.
      if (phase.path === cachedPath) await (await fetch(side.base + cachedPath)).arrayBuffer();
      const opts = { url: side.base + phase.path, connections: phase.connections, seconds: SECONDS };
      const r = await measure(side, () => runLoad(phase.distinct ? { ...opts, distinct: `r${runTag}${runId++}` } : opts));
      ((results[phase.name] ??= {})[side.name] ??= []).push(r);
    }
  }
}

// Both sides idle for the same seconds before the figure that counts (the last round's side
// would otherwise have had none, the other side a whole round).
await new Promise((resolve) => setTimeout(resolve, SETTLE_SECONDS * 1000));
const afterLoads = rssNow();
const peakOf = (side: string) => Math.max(...Object.values(results).flatMap((bySide) => (bySide[side] ?? []).map((r) => r.peakRss)));

const mean = (list: number[]) => list.reduce((a, b) => a + b, 0) / list.length;
// `floor`: the least ratio the memory budget may cost (docs/performance.md#memory).
const targets: Record<string, { ratio: number; text: string; floor: number; short: string }> = {
  health: { ratio: 1, text: '>= 1.00', floor: 0.85, short: 'health' },
  'cached status (one target)': { ratio: 1, text: '>= 1.00', floor: 0.75, short: 'cached status' },
  'uncached status (a new name per request)': { ratio: 1, text: '>= 1.00', floor: 0.7, short: 'uncached status' },
};
for (const phase of unpinnedPhases) {
  console.log(`${phase.name}, ${phase.connections} connections`);
  const rps: Record<string, number> = {};
  const cpuPerRequest: Record<string, number> = {};
  for (const side of sides) {
    const list = results[phase.name]![side.name]!;
    rps[side.name] = mean(list.map((r) => r.rps));
    cpuPerRequest[side.name] = (list.reduce((n, r) => n + r.cpuMs, 0) * 1000) / list.reduce((n, r) => n + r.total, 0);
    const failures = list.reduce((n, r) => n + r.non2xx + r.errors + r.timeouts, 0);
    const codes = new Map<string, number>();
    for (const r of list) for (const [code, { count }] of Object.entries(r.statusCodes)) codes.set(code, (codes.get(code) ?? 0) + count);
    const odd = [...codes].filter(([code]) => !code.startsWith('2')).map(([code, n]) => `${code}×${n}`);
    console.log(
      `  ${side.name.padEnd(9)} ${fmt(rps[side.name]!).padStart(7)} req/s  p50 ${fmt(mean(list.map((r) => r.p50)), 1).padStart(5)} ms` +
        `  p99 ${fmt(mean(list.map((r) => r.p99)), 1).padStart(6)} ms  peak RSS ${mib(Math.max(...list.map((r) => r.peakRss)))}` +
        `  CPU ${fmt(cpuPerRequest[side.name]!).padStart(4)} µs/req  pings ${fmt(mean(list.map((r) => r.pings / SECONDS)))}/s` +
        (failures > 0 ? `  (failed: ${failures} ${odd.join(' ')})` : ''),
    );
  }
  // What the rest of the machine (load generator, status server, dnsmasq, the kernel's loopback
  // work, neighbours) spends per request bounds what any service can serve on it. At the
  // target's rate, what is left of the machine is the CPU a service may spend per request;
  // a single-threaded one also has at most one core.
  const rest: Record<string, number> = {};
  for (const side of sides) {
    const list = results[phase.name]![side.name]!;
    const sum = (pick: (r: Measured) => number) => list.reduce((n, r) => n + pick(r), 0);
    const perRequest = (ms: number) => (ms * 1000) / sum((r) => r.total);
    const busy = sum((r) => r.machineMs) / (sum((r) => r.seconds) * 1000 * CORES);
    rest[side.name] = perRequest(sum((r) => r.machineMs - r.cpuDuringMs));
    console.log(
      `  ${side.name.padEnd(9)} machine ${fmt(busy * 100)}% busy (${CORES} cores); CPU per request outside the service: ` +
        `load ${fmt(perRequest(sum((r) => r.loadCpuMs)))} µs, status server + dnsmasq ${fmt(perRequest(sum((r) => r.helpersMs)))} µs, ` +
        `all ${fmt(rest[side.name]!)} µs`,
    );
  }
  const targetRate = targets[phase.name]!.ratio * rps.baseline!;
  console.log(
    `  at the target's ${fmt(targetRate)} req/s this machine leaves Observer ${fmt((CORES * 1e6) / targetRate - rest.observer!)} µs of CPU ` +
      `per request (it spends ${fmt(cpuPerRequest.observer!)}, the baseline ${fmt(cpuPerRequest.baseline!)}), ${fmt(1e6 / targetRate)} µs of it on one thread`,
  );
  // Each round's two runs compared with each other, then the geometric mean of those ratios.
  const roundRatios = results[phase.name]!.observer!.map((r, i) => r.rps / results[phase.name]!.baseline![i]!.rps);
  const ratio = Math.exp(mean(roundRatios.map(Math.log)));
  const { text, floor } = targets[phase.name]!;
  console.log(
    `  ratio observer / baseline: ${fmt(ratio, 2)}x (target ${text}; floor >= ${fmt(floor, 2)}: ${ratio >= floor ? 'held' : 'MISSED'}); ` +
      `by round ${roundRatios.map((r) => fmt(r, 2)).join(', ')}`,
  );
  // On a shared machine the load generator or a neighbour may set the pace; CPU time per
  // request is what each service itself spends, whoever is the limit.
  console.log(`  CPU per request, baseline / observer: ${fmt(cpuPerRequest.baseline! / cpuPerRequest.observer!, 2)}x (above 1: Observer spends less)\n`);
  summarise(
    `service  ${targets[phase.name]!.short.padEnd(16)} ratio ${fmt(ratio, 2)}x (target ${text})  CPU ${fmt(cpuPerRequest.observer!)} µs/req, ` +
      `baseline ${fmt(cpuPerRequest.baseline!)}  p99 ${fmt(mean(results[phase.name]!.observer!.map((r) => r.p99)), 1)} ms, baseline ${fmt(mean(results[phase.name]!.baseline!.map((r) => r.p99)), 1)}`,
  );
}
console.log(`Observer log lines written during the run: ${logLines}\n`);

const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
if (!perCoreOnly) printMemory();

if (process.env.BENCH_PER_CORE !== '0') await comparePerCore();

await Promise.all(
  [observer, baseline].map((child) => new Promise((resolve) => (child.exitCode === null ? (child.once('exit', resolve), child.kill('SIGTERM')) : resolve(null)))),
);
if (process.env.BENCH_CGROUP !== '0' && !perCoreOnly) await runSmall();
process.exit(0);

/** RSS of both services idle, after the loads and at their peak, against the targets. */
function printMemory(): void {
  console.log('memory (RSS of each process, read from /proc)');
  console.log(
    `  idle right after start   observer ${mib(idleAtStart.observer)}  baseline ${mib(idleAtStart.baseline)}`,
  );
  console.log(
    `  idle after ${IDLE_SECONDS} s           observer ${mib(idleSettled.observer)}  baseline ${mib(idleSettled.baseline)}` +
      `  (target: observer <= 100 MiB: ${verdict(idleSettled.observer <= 100 * 1024 * 1024)})`,
  );
  console.log(
    `  after the loads, ${SETTLE_SECONDS} s idle observer ${mib(afterLoads.observer)}  baseline ${mib(afterLoads.baseline)}` +
      `  ratio ${fmt(afterLoads.observer / afterLoads.baseline, 2)}x (target <= 1.00: ${verdict(afterLoads.observer <= afterLoads.baseline)})`,
  );
  console.log(`  peak during the loads    observer ${mib(peakOf('observer'))}  baseline ${mib(peakOf('baseline'))}\n`);
  summarise(
    `service  memory: idle after ${IDLE_SECONDS} s ${mib(idleSettled.observer)} (target <= 100 MiB: ${verdict(idleSettled.observer <= 100 * 1024 * 1024)}); ` +
      `after the loads ${mib(afterLoads.observer)} against ${mib(afterLoads.baseline)}, ${fmt(afterLoads.observer / afterLoads.baseline, 2)}x ` +
      `(target <= 1.00: ${verdict(afterLoads.observer <= afterLoads.baseline)}); peak ${mib(peakOf('observer'))} against ${mib(peakOf('baseline'))}`,
  );
}

/** Observer as docs/container.md runs it small, in a 256 MiB memory cgroup, under the same loads. */
async function runSmall(): Promise<void> {
  const limit = mib(SMALL_CONTAINER.limitBytes);
  const flags = Object.entries(SMALL_CONTAINER.env).map(([k, v]) => `${k}=${v}`).join(' ');
  console.log(`== Observer in a ${limit} memory cgroup (${flags}; swap counted), the same loads, one round each`);
  const group = memoryCgroup(`observer-bench-${process.pid}`, SMALL_CONTAINER.limitBytes);
  if (typeof group === 'string') {
    console.log(`  skipped: ${group}`);
    summarise(`service  in ${limit}: skipped (${group})`);
    return;
  }
  const port = await freePort();
  // As `npm start` would with these settings: its NODE_OPTIONS, then the container's.
  const env = {
    ...observerEnv,
    PORT: String(port),
    DATABASE_URL: `sqlite:${join(dataDir, 'small', 'observer.db')}`,
    ...SMALL_CONTAINER.env,
  };
  const [command, args] = group.spawnArgs([startBin, ...startArgs]);
  const small = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let smallStderr = '';
  small.stderr.on('data', (chunk: Buffer) => {
    if (smallStderr.length < 4000) smallStderr += chunk.toString();
  });
  try {
    const side: Side = { name: 'observer (256 MiB)', child: small, base: `http://127.0.0.1:${port}` };
    await waitForHealth(side.base, small);
    let failures = 0;
    for (const phase of phases) {
      if (phase.path === cachedPath) await (await fetch(side.base + cachedPath)).arrayBuffer();
      const opts = { url: side.base + phase.path, connections: phase.connections, seconds: SECONDS };
      const r = await measure(side, () => runLoad(phase.distinct ? { ...opts, distinct: `c${runTag}${runId++}` } : opts));
      const fivexx = Object.entries(r.statusCodes).filter(([code]) => code.startsWith('5')).reduce((n, [, { count }]) => n + count, 0);
      const other = Object.entries(r.statusCodes).filter(([code]) => !code.startsWith('2')).map(([code, { count }]) => `${code}×${count}`);
      failures += fivexx + r.errors + r.timeouts;
      console.log(
        `  ${phase.name.padEnd(42)} ${fmt(r.rps).padStart(7)} req/s  5xx ${fivexx}  errors ${r.errors + r.timeouts}` +
          `${other.length ? ` (${other.join(' ')})` : ''}  peak RSS ${mib(r.peakRss)}`,
      );
    }
    const alive = small.exitCode === null && small.signalCode === null;
    const usage = group.usage();
    console.log(
      `  still running after the loads: ${alive ? 'yes' : `NO (${small.exitCode ?? small.signalCode})`}; the group's peak ${mib(usage.maxBytes)} of ${limit}` +
        ` (page cache included), limit reached ${usage.failcnt} times, OOM kills ${usage.oomKills}`,
    );
    if (!alive) process.stderr.write(smallStderr);
    summarise(
      `service  in ${limit} (${flags}): ${failures} 5xx or errors, ${alive ? 'still running' : 'DIED'}, the group's peak ${mib(usage.maxBytes)}, OOM kills ${usage.oomKills}`,
    );
  } finally {
    small.kill('SIGTERM');
    await new Promise((resolve) => (small.exitCode === null && small.signalCode === null ? small.once('exit', resolve) : resolve(null)));
    group.remove();
  }
}

/**
 * Per core: each service in turn alone on core 0 (taskset, every thread it has or starts), the
 * load (wrk, one thread) and the status server on core 1, so that each side has one core to
 * itself and the load generator takes none of it. Rounds as above, the first side alternating;
 * the figures are the medians of the rounds, the ratio the median of the rounds' own ratios,
 * with their spread. Needs two cores, wrk and taskset; the services are unpinned afterwards.
 */
async function comparePerCore(): Promise<void> {
  const rounds = Number(process.env.BENCH_PER_CORE_ROUNDS ?? 5);
  if (CORES < 2 || !hasWrk()) {
    const why = CORES < 2 ? 'one core' : 'wrk or taskset missing (scripts/setup.sh installs wrk)';
    console.log(`== per core: skipped (${why})\n`);
    summarise(`service  per core: skipped (${why})`);
    return;
  }
  const nodeMajor = Number(process.versions.node.split('.')[0]);
  // On the newest Node line Observer should match a bare server; on older ones come close.
  const targets: Record<string, number> = {
    health: nodeMajor >= 26 ? 1 : 0.9,
    'cached status (one target)': nodeMajor >= 26 ? 1 : 0.9,
    'uncached status (a new name per request)': 0.9,
  };
  for (const side of sides) pin(side.child.pid, '0');
  pin(mcServer.pid, '1');
  const load = () => loadavg().map((n) => fmt(n, 2)).join(' ');
  console.log(`== per core, Node ${process.versions.node}: each service alone on core 0, wrk (one thread) and the status server on core 1`);
  console.log(`   ${rounds} rounds of ${SECONDS} s per side and phase after a 1 s warm-up; medians of the rounds; load average before: ${load()}\n`);
  const wrkOn = (side: Side, phase: Phase, seconds: number) => async (): Promise<LoadResult> => {
    const path = phase.distinct ? phase.path.replace('{n}', `p${runTag}${runId++}-{n}`) : phase.path;
    const r = await wrkLoad(side.base + path, { connections: phase.connections, seconds, cpu: 1 });
    const rps = r.requests / r.seconds;
    return { rps, p50: r.p50Ms, p99: r.p99Ms, non2xx: r.statusErrors, errors: r.socketErrors, timeouts: r.timeouts, total: r.requests, loadCpuMs: NaN, statusCodes: {} };
  };
  for (const phase of phases) {
    const bySide: Record<string, Measured[]> = {};
    for (const side of sides) await wrkOn(side, phase, 1)();
    for (let round = 0; round < rounds; round++) {
      for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
        if (phase.path === cachedPath) await (await fetch(side.base + cachedPath)).arrayBuffer();
        (bySide[side.name] ??= []).push(await measure(side, wrkOn(side, phase, SECONDS)));
      }
    }
    printPerCore(phase, bySide, targets[phase.name]!);
  }
  console.log(`   load average after: ${load()}\n`);
  for (const child of [observer, baseline, mcServer]) pin(child.pid, `0-${CORES - 1}`);
}

/** One phase of the per-core comparison: each side's medians, the ratio's median and spread. */
function printPerCore(phase: Phase, bySide: Record<string, Measured[]>, target: number): void {
  console.log(`${phase.name}, ${phase.connections} connections, pinned`);
  for (const side of sides) {
    const list = bySide[side.name]!;
    const failures = list.reduce((n, r) => n + r.non2xx + r.errors + r.timeouts, 0);
    const cpu = (list.reduce((n, r) => n + r.cpuMs, 0) * 1000) / list.reduce((n, r) => n + r.total, 0);
    console.log(
      `  ${side.name.padEnd(9)} ${fmt(median(list.map((r) => r.rps))).padStart(7)} req/s  p50 ${fmt(median(list.map((r) => r.p50)), 1).padStart(5)} ms` +
        `  p99 ${fmt(median(list.map((r) => r.p99)), 1).padStart(6)} ms  CPU ${fmt(cpu, 1).padStart(5)} µs/req` +
        (failures > 0 ? `  (failed: ${failures})` : ''),
    );
  }
  const ratios = bySide.observer!.map((r, i) => r.rps / bySide.baseline![i]!.rps);
  const ratio = median(ratios);
  // Neighbours on a shared machine take turns on core 0 too; the CPU each side spent per request
  // is what it costs whoever else ran there.
  const cpuRatios = bySide.observer!.map((r, i) => bySide.baseline![i]!.cpuMs / bySide.baseline![i]!.total / (r.cpuMs / r.total));
  const verdict = ratio >= target ? 'met' : 'MISSED';
  console.log(
    `  ratio observer / baseline: ${fmt(ratio, 2)}x (target >= ${fmt(target, 2)}: ${verdict}); ` +
      `spread ${fmt(Math.min(...ratios), 2)}–${fmt(Math.max(...ratios), 2)}, by round ${ratios.map((r) => fmt(r, 2)).join(', ')}`,
  );
  console.log(
    `  CPU per request, baseline / observer: ${fmt(median(cpuRatios), 2)}x (above 1: Observer spends less); ` +
      `spread ${fmt(Math.min(...cpuRatios), 2)}–${fmt(Math.max(...cpuRatios), 2)}\n`,
  );
  summarise(
    `service  per core, Node ${process.versions.node.split('.')[0]}: ${phase.name.split(' (')[0]!.padEnd(15)} ratio ${fmt(ratio, 2)}x (target >= ${fmt(target, 2)}: ${verdict}; ` +
      `rounds ${fmt(Math.min(...ratios), 2)}–${fmt(Math.max(...ratios), 2)})  ${fmt(median(bySide.observer!.map((r) => r.rps)))} against ${fmt(median(bySide.baseline!.map((r) => r.rps)))} req/s; ` +
      `CPU per request ${fmt(median(cpuRatios), 2)}x`,
  );
}
