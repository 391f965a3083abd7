/**
 * A soak: Observer as `npm start` runs it, under fixed-rate mixed traffic for 10 minutes.
 *
 *   npx tsx bench/soak.ts [minutes]        (default 10; e.g. 1 to try it)
 *
 * Builds the service and starts `node [the start script's flags] dist/main.js` in its own
 * process (SQLite in a temporary folder, the test network's DNS and allowlist, rate limits out
 * of the way, METRICS_TOKEN to read its heap, event-loop delay and open files). This process
 * sends, every 100 ms whatever the answers do (open loop):
 *   - cached status (one name) and uncached status of a canned-bytes Java server
 *     (bench/minimal-server.ts), under *.any.observer.test names drawn in turn from a
 *     population of POPULATION servers, as a real service sees a population of servers: each
 *     name comes back every 150 s, older than the status cache's 60 s, so it is pinged again;
 *     the service's bounded caches (status, parsed addresses, look-ups, refresh targets) hold
 *     the whole population after one round, long before the middle, and stay full after;
 *   - hostile targets: a server that never answers, one that answers garbage, a closed port;
 *   - images (icon, banner) and a bulk look-up of five entries (of the same population);
 *   - a render flood: /banner/motd with a new text on every request.
 * Every two minutes the traffic stops for QUIET_GAP_MS, as real traffic has its lulls. At the start (after a warm-up), the middle and the end, traffic pauses until
 * what is in flight has settled, and it prints the service's RSS, heap used (then, and what the
 * last full collection kept, observer_heap_live_bytes: heap used also holds the garbage waiting
 * for the next collection), event-loop delay p99 (over the period just ended) and open file
 * descriptors. It passes when none of RSS, the heap kept, the delay and the open files grew
 * more than 10% from the middle to the end, and no answer was a 5xx other than a documented 503
 * (`service_busy`, `overloaded`). It also prints the longest event-loop pause seen over the
 * soak after its warm-up (the maximum delay of prom-client's event-loop monitor, read every
 * five seconds; target under 50 ms). All traffic stays on loopback.
 */
import { execFileSync, fork, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, fetch, type RequestInit } from 'undici';
import { freePort } from '../scripts/ports.mjs';
import { serviceEnv, startCommand, summarise } from './support.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MINUTES = Number(process.argv[2] ?? 10);
const TICK_MS = 100;
const MAX_IN_FLIGHT = 400;
const TOKEN = 'soak-metrics-token-0123456789';
/** Distinct uncached names (half single look-ups, half bulk), each asked every 150 s. */
const POPULATION = 3000;
/**
 * The traffic's connections: idle ones close after a second, so that the open files counted
 * after a pause are the service's own, not the pool the last burst of traffic left open.
 */
const client = new Agent({ keepAliveTimeout: 1_000, keepAliveMaxTimeout: 1_000 });
const DOCUMENTED_503 = new Set(['service_busy', 'overloaded']);
/** A lull in the traffic every LULL_EVERY_MS, some seconds long, as a real service sees between busy spells. */
const LULL_EVERY_MS = 120_000;
const QUIET_GAP_MS = 12_000;
/** The longest event-loop pause the target allows. */
const TARGET_PAUSE_MS = 50;

/** Hostile targets: silent (accepts, never answers), garbage (answers noise), closed port. */
async function hostileTargets(): Promise<{ ports: number[]; close: () => void }> {
  const silent = net.createServer((socket) => socket.on('error', () => {}).resume());
  const garbage = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', () => socket.end(Buffer.from('\xff\xff\xff\xff\xff\x0fnot a status packet', 'latin1')));
  });
  await Promise.all([silent, garbage].map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
  const port = (s: net.Server) => (s.address() as net.AddressInfo).port;
  return { ports: [port(silent), port(garbage), await freePort()], close: () => [silent, garbage].forEach((s) => s.close()) };
}

function rssOf(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) * 1024;
}

/** The longest event-loop delay seen in any scrape so far, in seconds. */
let longestPause = 0;

/** One scrape of /metrics (prom-client resets its event-loop histogram per scrape: every scrape notes its maximum). */
async function scrape(base: string): Promise<string> {
  const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
  longestPause = Math.max(longestPause, valueOf(text, 'nodejs_eventloop_lag_max_seconds') || 0);
  return text;
}

function valueOf(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
}

async function metric(base: string, name: string): Promise<number> {
  return valueOf(await scrape(base), name);
}

/** What must not grow from the middle to the end. */
interface Figures {
  rss: number;
  /**
   * The heap that survived the last full collection (observer_heap_live_bytes): heap used also
   * holds whatever garbage waits for the next collection (up to the young generation's 16 MiB,
   * and the old generation's until its next full collection), which is not memory kept.
   */
  heapLive: number;
  loopP99: number;
  fds: number;
}

/** Full collections V8 had made by the last figures. */
let majorsBefore = 0;

/** The figures at the end of a period; heap used at that moment and the period's full collections are printed, not judged. */
async function figures(base: string, pid: number): Promise<{ judged: Figures; heapNow: number; majors: number }> {
  // One scrape for the delay (prom-client resets its histogram per scrape), then the rest.
  const loopP99 = await metric(base, 'nodejs_eventloop_lag_p99_seconds');
  const text = await scrape(base);
  const judged = { rss: rssOf(pid), heapLive: valueOf(text, 'observer_heap_live_bytes'), loopP99, fds: valueOf(text, 'process_open_fds') };
  const majorsNow = valueOf(text, 'nodejs_gc_duration_seconds_count{kind="major"}') || 0;
  const majors = majorsNow - majorsBefore;
  majorsBefore = majorsNow;
  return { judged, heapNow: valueOf(text, 'nodejs_heap_size_used_bytes'), majors };
}

const MB = (n: number) => `${(n / 1048576).toFixed(1)} MB`;
function print(label: string, { judged: f, heapNow, majors }: { judged: Figures; heapNow: number; majors: number }): void {
  console.log(
    `${label.padEnd(7)} rss ${MB(f.rss)}  heap now ${MB(heapNow)}, kept after the last full collection ${MB(f.heapLive)} (${majors} in the period)  ` +
      `event-loop p99 ${(f.loopP99 * 1000).toFixed(1)} ms  open fds ${f.fds}`,
  );
}

/** Fixed-rate traffic: `send()` starts one tick's requests; `drain()` waits for what is in flight. */
function traffic(base: string, mcPort: number, hostile: number[]) {
  const counts = { sent: 0, skipped: 0, byStatus: new Map<string, number>(), bad: [] as string[] };
  let inFlight = 0;
  let n = 0;
  const tally = (key: string) => counts.byStatus.set(key, (counts.byStatus.get(key) ?? 0) + 1);
  const request = (path: string, init?: RequestInit) => {
    if (inFlight >= MAX_IN_FLIGHT) return void (counts.skipped += 1);
    inFlight += 1;
    counts.sent += 1;
    fetch(`${base}${path}`, { ...init, dispatcher: client })
      .then(async (res) => {
        const body = await res.text();
        tally(String(res.status));
        if (res.status >= 500 && !(res.status === 503 && DOCUMENTED_503.has((JSON.parse(body) as { error?: string }).error ?? ''))) {
          counts.bad.push(`${res.status} ${path.slice(0, 60)} ${body.slice(0, 120)}`);
        }
      })
      .catch((error: unknown) => {
        tally('network error');
        counts.bad.push(`network error ${path.slice(0, 60)} ${String(error)}`);
      })
      .finally(() => (inFlight -= 1));
  };
  const send = () => {
    n += 1;
    const cached = `soak.any.observer.test:${mcPort}`;
    for (let i = 0; i < 4; i += 1) request(`/api/v1/status/${cached}`);
    request(`/api/v1/status/u${n % (POPULATION / 2)}.any.observer.test:${mcPort}`);
    request(`/api/v1/status/127.0.0.1:${hostile[n % hostile.length]!}`);
    request(`/api/v1/icon/dynamic?address=${cached}&size=${16 + (n % 64)}`);
    if (n % 2 === 0) request(`/api/v1/banner/${cached}`);
    if (n % 5 === 0) {
      const servers = Array.from({ length: 5 }, (_, i) => ({ address: `b${(n + i) % (POPULATION / 2)}.any.observer.test:${mcPort}` }));
      request('/api/v1/status/bulk', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ servers }) });
    }
    for (let i = 0; i < 3; i += 1) request(`/api/v1/banner/motd?motd=${encodeURIComponent(`§${i}Soak §l${n}-${i}`)}`);
  };
  const drain = async () => {
    for (let i = 0; i < 300 && inFlight > 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 50));
    // Past the pool's keep-alive: its idle connections are closed.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
  };
  return { counts, send, drain };
}

async function run(base: string, load: ReturnType<typeof traffic>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  let lullAt = Date.now() + LULL_EVERY_MS;
  while (Date.now() < end) {
    if (Date.now() >= lullAt) {
      await new Promise((resolve) => setTimeout(resolve, QUIET_GAP_MS));
      lullAt = Date.now() + LULL_EVERY_MS;
    }
    load.send();
    await new Promise((resolve) => setTimeout(resolve, TICK_MS));
  }
  await load.drain();
  void base;
}

if (!Number.isFinite(MINUTES) || MINUTES <= 0) throw new Error(`minutes must be a positive number, not ${process.argv[2]}`);
execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
const mcServer = fork(join(ROOT, 'bench/minimal-server.ts'), ['--serve'], { execArgv: process.execArgv, stdio: 'inherit' });
const mcPort = await new Promise<number>((resolve) => mcServer.once('message', (m) => resolve((m as { port: number }).port)));
const hostile = await hostileTargets();
const dataDir = mkdtempSync(join(tmpdir(), 'observer-soak-'));
const port = await freePort();
const service = spawn(...startCommand(ROOT), {
  cwd: ROOT,
  stdio: ['ignore', 'ignore', 'inherit'],
  // Every loopback target is one IP: the per-target and per-client budgets are out of the way.
  env: serviceEnv(port, dataDir, {
    TARGET_PINGS_PER_MINUTE: '100000',
    NEW_SERVERS_PER_CLIENT_PER_DAY: '1000000',
    RATE_LIMIT_STATUS: '10000000',
    RATE_LIMIT_GENERAL: '10000000',
    RATE_LIMIT_MEDIA: '10000000',
    PING_TIMEOUT_MS: '1000',
    // All the traffic comes from one address: its connections are not one client's.
    MAX_CONNECTIONS_PER_CLIENT: '100000',
    METRICS_TOKEN: TOKEN,
  }),
});
const base = `http://127.0.0.1:${port}`;
let stopping = false;
const poller = setInterval(() => void scrape(base).catch(() => undefined), 5_000);
service.on('exit', (code, signal) => {
  if (!stopping) console.log(`the service exited during the soak: ${signal ?? `code ${code}`}`);
});
try {
  for (let i = 0; i < 300; i += 1) {
    if (await fetch(`${base}/api/v1/status`).then((r) => r.ok, () => false)) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const load = traffic(base, mcPort, hostile.ports);
  const total = MINUTES * 60_000;
  console.log(`soak: ${MINUTES} min, a request batch every ${TICK_MS} ms, service pid ${service.pid}`);
  await run(base, load, Math.min(30_000, total / 10));
  const start = await figures(base, service.pid!);
  print('start', start);
  // Start-up and the warm-up are not the soak: its longest pause is counted from here.
  const warmUpPause = longestPause;
  longestPause = 0;
  await run(base, load, total / 2);
  const middle = await figures(base, service.pid!);
  print('middle', middle);
  await run(base, load, total / 2);
  const end = await figures(base, service.pid!);
  print('end', end);
  console.log(`requests ${load.counts.sent} (skipped at ${MAX_IN_FLIGHT} in flight: ${load.counts.skipped}); by status ${JSON.stringify(Object.fromEntries(load.counts.byStatus))}`);
  const grown = (Object.keys(end.judged) as Array<keyof Figures>).filter((k) => end.judged[k] > middle.judged[k] * 1.1);
  for (const k of grown) console.log(`grew more than 10% over the second half: ${k} ${middle.judged[k]} -> ${end.judged[k]}`);
  for (const line of load.counts.bad.slice(0, 10)) console.log(`not allowed: ${line}`);
  const pass = grown.length === 0 && load.counts.bad.length === 0;
  const pauseMs = longestPause * 1000;
  console.log(
    `longest event-loop pause over the soak after the warm-up: ${pauseMs.toFixed(1)} ms (target < ${TARGET_PAUSE_MS} ms; ` +
      `${(warmUpPause * 1000).toFixed(1)} ms during start-up and the warm-up)`,
  );
  console.log(pass ? 'PASS' : 'FAIL');
  summarise(
    `soak     ${MINUTES} min of mixed traffic: longest event-loop pause ${pauseMs.toFixed(1)} ms (target < ${TARGET_PAUSE_MS} ms: ` +
      `${pauseMs < TARGET_PAUSE_MS ? 'met' : 'MISSED'}); over the second half rss ${MB(middle.judged.rss)} -> ${MB(end.judged.rss)}, heap kept ` +
      `${MB(middle.judged.heapLive)} -> ${MB(end.judged.heapLive)}; ${pass ? 'PASS' : 'FAIL'}`,
  );
  process.exitCode = pass ? 0 : 1;
} finally {
  stopping = true;
  clearInterval(poller);
  service.kill('SIGTERM');
  void client.close();
  mcServer.kill('SIGTERM');
  hostile.close();
  rmSync(dataDir, { recursive: true, force: true });
}
