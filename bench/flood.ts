/**
 * One client flooding renders, another client using the service (docs/hostile-clients.md).
 *
 *   npm run bench -- flood        (or: npx tsx bench/flood.ts)
 *
 * Starts Observer as `npm start` runs it (dist/ built first unless BENCH_SKIP_BUILD=1), in the
 * default configuration plus the test network's settings, and a canned-bytes Java status
 * server. A second client (X-Forwarded-For 198.51.100.2) asks for health and one cached status,
 * 25 times a second each, first alone (the baseline of this run), then while a flooding client
 * (bench/load-worker.mjs in its own process, 32 connections) asks /banner/motd for a new text
 * with every request. Prints the second client's p50 and p99 latencies in both phases and the
 * flooder's answers by status code. Targets: the p99 of health and of the cached status during
 * the flood at most twice their p99 alone, and the flooder gets only 200s and 503s. Also prints
 * what the render pool's worker thread costs: Observer's RSS before its first image and a
 * second after it (the thread started, canvas, sharp and the fonts loaded), at the flood's
 * peak, and once the idle thread has ended (a minute after the flood). Loopback only. Knobs: BENCH_SECONDS (30), BENCH_OBSERVER_ENV (`A=1,B=2`).
 *
 * A phase lasts 30 s, 750 answers of each kind, so that a p99 is its 8th slowest answer and
 * not decided by two or three stray answers on a busy machine.
 */
import { execFile, execFileSync, fork, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../scripts/ports.mjs';
import { fmt, rssOf, serviceEnv, startCommand, summarise, waitForHealth } from './support.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);
const PROBE_EVERY_MS = 20;
/** The p99 during the flood may be at most this many times the p99 alone. */
const TARGET_RATIO = 2;
const mib = (bytes: number) => `${fmt(bytes / 1024 / 1024)} MiB`;

if (process.env.BENCH_SKIP_BUILD !== '1') execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });

const mcServer = fork(join(ROOT, 'bench/minimal-server.ts'), ['--serve'], { execArgv: process.execArgv, stdio: 'inherit' });
const mcPort = await new Promise<number>((resolve) => mcServer.once('message', (m) => resolve((m as { port: number }).port)));

const dataDir = mkdtempSync(join(tmpdir(), 'observer-flood-'));
const port = await freePort();
const env = serviceEnv(port, dataDir, {
  TRUST_PROXY: 'true',
  LOG_LEVEL: 'warn',
  // The second client's 25 cached statuses a second stay clear of its per-minute limits.
  RATE_LIMIT_STATUS: '10000000',
  RATE_LIMIT_GENERAL: '10000000',
});
const observer = spawn(...startCommand(ROOT), { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'inherit'] });
const base = `http://127.0.0.1:${port}`;
process.on('exit', () => {
  for (const child of [observer, mcServer]) if (child.exitCode === null) child.kill('SIGTERM');
  rmSync(dataDir, { recursive: true, force: true });
});
await waitForHealth(base, observer);

const other = { 'x-forwarded-for': '198.51.100.2' };
const cached = `${base}/api/v1/status/127.0.0.1:${mcPort}`;
const warm = (await (await fetch(cached, { headers: other })).json()) as { online?: boolean };
if (warm.online !== true) throw new Error('the status server did not answer online');

/** The second client's latencies for `seconds`: health and the cached status, in turn. */
async function probe(seconds: number) {
  const latencies = { health: [] as number[], cached: [] as number[] };
  const failures: string[] = [];
  const until = performance.now() + seconds * 1000;
  const pending: Promise<void>[] = [];
  for (let i = 0; performance.now() < until; i++) {
    const [name, url] = i % 2 === 0 ? (['health', `${base}/api/v1/status`] as const) : (['cached', cached] as const);
    const started = performance.now();
    pending.push(
      fetch(url, { headers: other }).then(async (res) => {
        await res.arrayBuffer();
        latencies[name].push(performance.now() - started);
        if (res.status !== 200) failures.push(`${name} ${res.status}`);
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, PROBE_EVERY_MS));
  }
  await Promise.all(pending);
  return { latencies, failures };
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
};

function flood(seconds: number): Promise<{ rps: number; statusCodes: Record<string, { count: number }>; errors: number }> {
  const options = { url: `${base}/api/v1/banner/motd?motd=flood%20{n}`, distinct: 'text', connections: 32, seconds };
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [join(ROOT, 'bench/load-worker.mjs'), JSON.stringify(options)], { maxBuffer: 1 << 24 }, (error, stdout) => {
      if (error) reject(error);
      else resolve(JSON.parse(stdout) as { rps: number; statusCodes: Record<string, { count: number }>; errors: number });
    });
  });
}

// What the first image costs: the render pool's first thread, with canvas, sharp and the fonts.
await new Promise((resolve) => setTimeout(resolve, 2_000));
const beforeImage = rssOf(observer.pid);
const first = await fetch(`${base}/api/v1/banner/motd?motd=first`, { headers: other });
if (first.status !== 200) throw new Error(`the first image answered ${first.status}`);
await first.arrayBuffer();
await new Promise((resolve) => setTimeout(resolve, 1_000));
const afterImage = rssOf(observer.pid);

const quiet = await probe(SECONDS);
let peak = rssOf(observer.pid);
const sampler = setInterval(() => (peak = Math.max(peak, rssOf(observer.pid))), 100);
const [flooded, flooder] = await Promise.all([probe(SECONDS), flood(SECONDS)]);
clearInterval(sampler);
// The pool ends a thread idle for a minute (src/render/pool.ts).
await new Promise((resolve) => setTimeout(resolve, 65_000));
const afterThread = rssOf(observer.pid);

console.log(`Second client, health and a cached status, ${1000 / PROBE_EVERY_MS / 2} requests/s each, ${SECONDS} s per phase`);
for (const name of ['health', 'cached'] as const) {
  const alone = percentile(quiet.latencies[name], 0.99);
  const during = percentile(flooded.latencies[name], 0.99);
  for (const [phase, result] of [['alone', quiet], ['during the flood', flooded]] as const) {
    const values = result.latencies[name];
    console.log(
      `  ${name.padEnd(7)} ${phase.padEnd(17)} p50 ${fmt(percentile(values, 0.5), 1).padStart(6)} ms   p99 ${fmt(percentile(values, 0.99), 1).padStart(6)} ms` +
        (phase === 'alone' ? '' : `   ${fmt(during / alone, 2)}x alone (target <= ${TARGET_RATIO}x)`),
    );
  }
  summarise(
    `flood    ${name === 'health' ? 'health' : 'cached status'} p99 ${fmt(during, 1)} ms during a /banner/motd flood against ${fmt(alone, 1)} ms alone: ` +
      `${fmt(during / alone, 2)}x (target <= ${TARGET_RATIO}x: ${during <= TARGET_RATIO * alone ? 'met' : 'MISSED'})`,
  );
}
const failures = [...quiet.failures, ...flooded.failures];
console.log(`  answers other than 200 to the second client: ${failures.length === 0 ? 'none' : failures.slice(0, 10).join(', ')}`);
const codes = Object.entries(flooder.statusCodes).map(([code, { count }]) => `${code}: ${fmt(count)}`).join(', ');
const unexpected = Object.keys(flooder.statusCodes).filter((code) => code !== '200' && code !== '503');
console.log(`Flooder, new MOTD texts on 32 connections: ${fmt(flooder.rps)} requests/s; answers ${codes}; socket errors ${flooder.errors}`);
console.log(`  only 200s and 503s: ${unexpected.length === 0 && flooder.errors === 0 ? 'yes' : `no (${unexpected.join(', ')})`}`);
console.log(
  `Observer's RSS: ${mib(beforeImage)} before its first image, ${mib(afterImage)} a second after it (the render thread: ${mib(afterImage - beforeImage)}), ` +
    `${mib(peak)} at the flood's peak, ${mib(afterThread)} once the idle thread had ended`,
);
summarise(
  `flood    flooder: ${fmt(flooder.rps)} req/s (${codes}); a render thread costs ${mib(afterImage - beforeImage)} of RSS (${mib(beforeImage)} -> ${mib(afterImage)}), ` +
    `peak ${mib(peak)} during the flood, ${mib(afterThread)} once the idle thread had ended`,
);
process.exit(0);
