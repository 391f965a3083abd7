/**
 * Shared benchmark helpers. Load comes from autocannon in a child process, so the load
 * generator does not share an event loop with the server it measures. Every run is bounded
 * in time and sends traffic to loopback only.
 */
import { execFile, execFileSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const autocannonBin = join(dirname(require.resolve('autocannon/package.json')), 'autocannon.js');

export interface LoadResult {
  requestsPerSecond: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  non2xx: number;
  errors: number;
}

export interface LoadOptions {
  connections?: number;
  seconds?: number;
  pipelining?: number;
  /** POST bodies (bulk look-ups): method, JSON body, content type. */
  method?: 'GET' | 'POST';
  jsonBody?: string;
}

export function load(url: string, options: LoadOptions = {}): Promise<LoadResult> {
  if (!/^http:\/\/(127\.\d+\.\d+\.\d+|\[::1\]|localhost)(:\d+)?\//.test(url)) throw new Error(`not a loopback URL: ${url}`);
  const args = [
    autocannonBin,
    '-j',
    '-c',
    String(options.connections ?? 32),
    '-d',
    String(options.seconds ?? 4),
    '-p',
    String(options.pipelining ?? 1),
    ...(options.method ? ['-m', options.method] : []),
    ...(options.jsonBody !== undefined ? ['-b', options.jsonBody, '-H', 'content-type=application/json'] : []),
    url,
  ];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout) => {
      if (error) return reject(error);
      const r = JSON.parse(stdout) as {
        requests: { average: number };
        latency: { p50: number; p99: number };
        non2xx: number;
        errors: number;
      };
      resolve({
        requestsPerSecond: r.requests.average,
        latencyP50Ms: r.latency.p50,
        latencyP99Ms: r.latency.p99,
        non2xx: r.non2xx,
        errors: r.errors,
      });
    });
  });
}

/** What one wrk run measured (wrkLoad). */
export interface WrkResult {
  requests: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  /** Answers with a status of 400 or more. */
  statusErrors: number;
  /** Connections that failed to connect, read or write. */
  socketErrors: number;
  timeouts: number;
}

/**
 * A load from wrk (Debian's `wrk`), one thread on core `cpu` (taskset) and `connections`
 * connections, for `seconds`; `{n}` in the URL's path becomes a number counting up, one per
 * request (bench/wrk.lua). wrk, written in C, spends a fraction of autocannon's CPU per
 * request, so that on a small machine the service, not the load generator, sets the pace.
 */
export function wrkLoad(url: string, options: { connections: number; seconds: number; cpu: number }): Promise<WrkResult> {
  if (!/^http:\/\/(127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?\//.test(url)) throw new Error(`not a loopback URL: ${url}`);
  const path = url.slice(url.indexOf('/', 'http://'.length));
  const [prefix, suffix] = path.split('{n}');
  const env = suffix === undefined ? process.env : { ...process.env, WRK_PATH_PREFIX: prefix, WRK_PATH_SUFFIX: suffix };
  const script = join(dirname(fileURLToPath(import.meta.url)), 'wrk.lua');
  const args = ['-c', String(options.cpu), 'wrk', '-t1', `-c${options.connections}`, `-d${options.seconds}s`, '-s', script, url.replace('{n}', '0')];
  return new Promise((resolve, reject) => {
    execFile('taskset', args, { env }, (error, stdout) => {
      const line = stdout.split('\n').find((l) => l.startsWith('WRK '));
      if (error || !line) return reject(error ?? new Error(`no figures from wrk: ${stdout}`));
      const r = JSON.parse(line.slice(4)) as Record<string, number>;
      resolve({
        requests: r.requests!,
        seconds: r.durationUs! / 1e6,
        p50Ms: r.p50Us! / 1000,
        p99Ms: r.p99Us! / 1000,
        statusErrors: r.status!,
        socketErrors: r.connect! + r.read! + r.write!,
        timeouts: r.timeout!,
      });
    });
  });
}

/** Whether wrk and taskset are installed (scripts/setup.sh installs wrk; taskset is util-linux's). */
export function hasWrk(): boolean {
  try {
    execFileSync('sh', ['-c', 'command -v wrk && command -v taskset'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Pins every thread of a running process (and the threads it starts later) to `cpus` (`0`, `0-1`). */
export function pin(pid: number | undefined, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

/**
 * Adds a line to the run's summary: `npm run bench` sets BENCH_SUMMARY to a file and prints it
 * once every benchmark has run, so that the figures that answer the targets stand together.
 */
export function summarise(line: string): void {
  const file = process.env.BENCH_SUMMARY;
  if (file) appendFileSync(file, `${line}\n`);
}

/** Resident set size of a process in bytes (Linux /proc), or NaN where unavailable. */
export function rssOf(pid: number | undefined): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function fmt(n: number, digits = 0): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

export function ratioLine(label: string, value: number, baseline: number, target: string): string {
  return `${label}: ${fmt(value / baseline, 2)}x (target ${target})`;
}

/**
 * Measures several targets in interleaved rounds (A, B, A, B, ...) and keeps each one's median
 * requests per second, so that a burst of noise on this shared machine hits all of them alike.
 */
export async function compareThroughput(
  targets: Record<string, string>,
  options: { rounds?: number; seconds?: number; connections?: number } = {},
): Promise<Record<string, LoadResult>> {
  const rounds = options.rounds ?? 3;
  const results: Record<string, LoadResult[]> = {};
  for (const url of Object.values(targets)) await load(url, { seconds: 1, connections: options.connections ?? 32 });
  for (let round = 0; round < rounds; round++) {
    for (const [name, url] of Object.entries(targets)) {
      const r = await load(url, { seconds: options.seconds ?? 3, connections: options.connections ?? 32 });
      (results[name] ??= []).push(r);
    }
  }
  return Object.fromEntries(
    Object.entries(results).map(([name, list]) => {
      const rps = median(list.map((r) => r.requestsPerSecond));
      const picked = list.find((r) => r.requestsPerSecond === rps) ?? list[0]!;
      return [name, { ...picked, requestsPerSecond: rps }];
    }),
  );
}

/**
 * Runs `concurrency` loops of back-to-back calls of `client` for `seconds`; counts completed
 * calls per second and failures (protocol client benchmarks).
 */
export async function runLoops(client: () => Promise<unknown>, concurrency: number, seconds: number) {
  const start = performance.now();
  const cpuBefore = process.cpuUsage();
  const end = start + seconds * 1000;
  let done = 0;
  let failed = 0;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      try {
        await client();
        done += 1;
      } catch {
        failed += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const cpu = process.cpuUsage(cpuBefore);
  return { perSecond: done / ((performance.now() - start) / 1000), failed, done, cpuMicros: cpu.user + cpu.system };
}

/**
 * Interleaved rounds (A, B, A, B, …) of `runLoops` per client at one concurrency, after a short
 * warm-up; each client's median calls per second, its failures over all rounds, and the CPU
 * time this process spent per completed call (the server runs elsewhere; on a shared machine
 * this moves far less between runs than the rates).
 */
export async function compareClients(
  clients: Record<string, () => Promise<unknown>>,
  options: { concurrency: number; rounds: number; seconds: number },
): Promise<{ medians: Record<string, number>; failures: Record<string, number>; cpuMicrosPerCall: Record<string, number> }> {
  for (const client of Object.values(clients)) await runLoops(client, options.concurrency, 0.5);
  const rates: Record<string, number[]> = {};
  const failures: Record<string, number> = {};
  const cpu: Record<string, { micros: number; calls: number }> = {};
  for (let round = 0; round < options.rounds; round++) {
    for (const [name, client] of Object.entries(clients)) {
      const r = await runLoops(client, options.concurrency, options.seconds);
      (rates[name] ??= []).push(r.perSecond);
      failures[name] = (failures[name] ?? 0) + r.failed;
      const spent = (cpu[name] ??= { micros: 0, calls: 0 });
      spent.micros += r.cpuMicros;
      spent.calls += r.done;
    }
  }
  return {
    medians: Object.fromEntries(Object.entries(rates).map(([name, list]) => [name, median(list)])),
    failures,
    cpuMicrosPerCall: Object.fromEntries(Object.entries(cpu).map(([name, { micros, calls }]) => [name, micros / Math.max(1, calls)])),
  };
}

export async function waitForHealth(base: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${base}/api/v1/status`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no answer from ${base} within 30 s`);
}

/**
 * The command `npm start` runs (scripts/start.sh: node's flags and NODE_OPTIONS, then
 * dist/main.js), with `nodeArgs` for node; spawned with serviceEnv(), whose PATH finds this
 * process's node first. The script execs node: the child's pid is the service's.
 */
export function startCommand(root: string, nodeArgs: readonly string[] = []): [string, string[]] {
  return ['sh', [join(root, 'scripts/start.sh'), ...nodeArgs]];
}

/** How a running node process was started: NODE_OPTIONS and its command line (Linux /proc). */
export function commandLineOf(pid: number | undefined): string {
  try {
    const nodeOptions = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').find((v) => v.startsWith('NODE_OPTIONS='));
    return [nodeOptions, ...readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')].filter(Boolean).join(' ');
  } catch {
    return '(not running)';
  }
}

/**
 * The environment a benchmark starts Observer with: the defaults plus only the test network's
 * settings (the loopback DNS server and allowlist, a SQLite file in `dataDir`), then the
 * benchmark's own `settings`, then BENCH_OBSERVER_ENV (`A=1,B=2`) for experiments. NODE_OPTIONS
 * given here follow the start script's own (it puts them after its own, as with `npm start`).
 */
export function serviceEnv(port: number, dataDir: string, settings: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {
    // The start script runs `node`: the one running this benchmark.
    PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
    HOME: process.env.HOME ?? '',
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATABASE_URL: `sqlite:${join(dataDir, 'observer.db')}`,
    DNS_SERVERS: '127.0.0.1:5353',
    TARGET_ALLOWLIST: '127.0.0.0/8,::1/128',
    ...settings,
  };
  for (const pair of (process.env.BENCH_OBSERVER_ENV ?? '').split(',').filter(Boolean)) {
    const at = pair.indexOf('=');
    env[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return env;
}

/** A cgroup v1 memory group for one child process (the limit a container runtime would set). */
export interface MemoryCgroup {
  /** Runs `command` inside the group: the shell joins it, then execs the command. */
  spawnArgs(command: string[]): [string, string[]];
  /** Peak memory the group used (RSS and page cache), times the limit was hit, OOM kills. */
  usage(): { maxBytes: number; failcnt: number; oomKills: number };
  remove(): void;
}

const CGROUP_ROOT = '/sys/fs/cgroup/memory';

/**
 * Creates a cgroup v1 memory group limited to `limitBytes` (swap included), or returns the
 * reason it cannot (not root, no v1 memory controller).
 */
export function memoryCgroup(name: string, limitBytes: number): MemoryCgroup | string {
  if (process.getuid?.() !== 0) return 'not root';
  if (!existsSync(join(CGROUP_ROOT, 'memory.limit_in_bytes'))) return `no cgroup v1 memory controller at ${CGROUP_ROOT}`;
  const dir = join(CGROUP_ROOT, name);
  try {
    mkdirSync(dir);
    writeFileSync(join(dir, 'memory.limit_in_bytes'), String(limitBytes));
    // Swap counts against the limit too, where the kernel accounts it.
    if (existsSync(join(dir, 'memory.memsw.limit_in_bytes'))) writeFileSync(join(dir, 'memory.memsw.limit_in_bytes'), String(limitBytes));
  } catch (error) {
    try {
      rmdirSync(dir);
    } catch {
      // not created
    }
    return `cannot set up ${dir}: ${(error as Error).message}`;
  }
  const read = (file: string) => readFileSync(join(dir, file), 'utf8');
  return {
    spawnArgs: (command) => ['/bin/sh', ['-c', `echo $$ > ${join(dir, 'cgroup.procs')} && exec "$@"`, 'sh', ...command]],
    usage: () => ({
      maxBytes: Number(read('memory.max_usage_in_bytes')),
      failcnt: Number(read('memory.failcnt')),
      oomKills: Number(/oom_kill (\d+)/.exec(read('memory.oom_control'))?.[1] ?? 0),
    }),
    remove: () => {
      // The group can only go once its processes have: retry briefly.
      for (let i = 0; i < 50; i++) {
        try {
          rmdirSync(dir);
          return;
        } catch {
          execFileSync('sleep', ['0.1']);
        }
      }
    },
  };
}

/** How one stored-data route fared during an upgrade (storedDataWatch). */
export interface StoredDataFigures {
  /** Time it went unanswered (the gaps before answers other than 200, from the start of the watch), ms. */
  unanswered: number;
  /** The longest such stretch, ms. */
  longest: number;
  /** The slowest answer, ms, and when it was asked (ms after `origin`). */
  slowest: number;
  slowestAt: number;
  answers: number;
  /** Answers other than 200, by status (0: no answer). */
  refused: Record<number, number>;
}

/**
 * Asks each of `routes` (name: path under `base`) every 100 ms, one request at a time per
 * route, until stopped; `stop()` resolves with each route's figures.
 */
export function storedDataWatch<Name extends string>(base: string, routes: Record<Name, string>, origin: number) {
  let stopped = false;
  const statusOf = async (path: string) => {
    try {
      const res = await fetch(`${base}${path}`);
      await res.arrayBuffer();
      return res.status;
    } catch {
      return 0;
    }
  };
  const watch = async (path: string) => {
    let last = performance.now();
    let gap = 0;
    const figures: StoredDataFigures = { unanswered: 0, longest: 0, slowest: 0, slowestAt: 0, answers: 0, refused: {} };
    while (!stopped) {
      const asked = performance.now();
      const status = await statusOf(path);
      const ok = status === 200;
      if (!ok) figures.refused[status] = (figures.refused[status] ?? 0) + 1;
      const now = performance.now();
      figures.answers += 1;
      if (now - asked > figures.slowest) Object.assign(figures, { slowest: now - asked, slowestAt: asked - origin });
      gap = ok ? 0 : gap + (now - last);
      if (!ok) figures.unanswered += now - last;
      figures.longest = Math.max(figures.longest, gap);
      last = now;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return figures;
  };
  const running = (Object.entries(routes) as Array<[Name, string]>).map(async ([name, path]) => [name, await watch(path)] as const);
  return {
    stop: async (): Promise<Record<Name, StoredDataFigures>> => {
      stopped = true;
      return Object.fromEntries(await Promise.all(running)) as Record<Name, StoredDataFigures>;
    },
  };
}

/** Milliseconds as seconds with one decimal, e.g. `1.7 s`. */
export const seconds = (ms: number) => `${fmt(ms / 1000, 1)} s`;

/** The figures of storedDataWatch as one line. */
export function storedDataLine(figures: Record<string, StoredDataFigures>): string {
  const routes = Object.entries(figures);
  return (
    `${routes.map(([name, f]) => `${name} ${seconds(f.unanswered)} (longest stretch ${seconds(f.longest)}; not 200: ${JSON.stringify(f.refused)})`).join(', ')}; ` +
    `slowest answers ${routes.map(([name, f]) => `${name} ${fmt(f.slowest)} ms (of ${fmt(f.answers)}, ${seconds(f.slowestAt)} after the spawn)`).join(', ')}`
  );
}
