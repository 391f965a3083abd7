/**
 * CPU per cached status request, this working tree against a git revision, in one process.
 *
 *   npx tsx bench/status-cpu.ts [REV]      (default REV: main)
 *
 * Extracts REV's src/, assets/ and package.json (git archive) under node_modules/.cache and builds
 * its dist/ there (worker threads run built modules), composes both applications as
 * main.ts does (SQLite history in a temporary folder, metrics off), each on its own loopback
 * port, and primes one cached status of a local minecraft-protocol server in each. Then, in
 * alternating batches (REV, tree, REV, tree, …), a raw client sends N pipelined
 * `GET /api/v1/status/<address>` requests over a few kept-alive connections and reads the
 * answers; process.cpuUsage() around each batch gives the CPU per request. The client's own
 * share is the same on both sides, so the difference is the servers'. Prints the median per
 * side and their ratio; no threshold, no assertion. Without REV (no git, unknown revision), it
 * measures the tree alone. Environment: BENCH_REQUESTS (20000 per batch), BENCH_BATCHES (8 per
 * side). All traffic stays on loopback.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startJavaServer } from '../test/support/minecraft.js';
import { fmt, median } from './support.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const REV = process.argv[2] ?? 'main';
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20_000);
const BATCHES = Number(process.env.BENCH_BATCHES ?? 8);
const CONNECTIONS = 4;
const PIPELINE = 16;

/** REV's src/ extracted where Node finds this checkout's node_modules; null if git cannot give it. */
function extract(rev: string): string | null {
  let commit: string;
  try {
    commit = execFileSync('git', ['rev-parse', '--verify', `${rev}^{commit}`], { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  } catch {
    return null;
  }
  const dir = join(ROOT, 'node_modules', '.cache', 'observer-status-cpu', commit);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const archive = execFileSync('git', ['archive', commit, 'src', 'assets', 'package.json', 'tsconfig.json', 'tsconfig.build.json'], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  // Worker threads run built modules (core/module-worker.ts): REV's own build, beside its sources.
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(dir, 'tsconfig.build.json')], { cwd: dir, stdio: 'inherit' });
  return join(dir, 'src');
}

interface Side {
  name: string;
  port: number;
  close: () => Promise<void>;
}

const dataDirs: string[] = [];
const java = await startJavaServer({ motd: 'bench', onlinePlayers: 5 });
const address = `127.0.0.1:${java.port}`;
const env = {
  TARGET_ALLOWLIST: '127.0.0.0/8',
  STATUS_CACHE_TTL: '3600',
  RATE_LIMIT_STATUS: '10000000',
  TARGET_PINGS_PER_MINUTE: '100000',
  NEW_SERVERS_PER_CLIENT_PER_DAY: '1000000',
  ICMP: 'off',
  LOG_LEVEL: 'warn',
};

async function start(name: string, srcDir: string): Promise<Side> {
  const dataDir = mkdtempSync(join(tmpdir(), 'observer-status-cpu-'));
  dataDirs.push(dataDir);
  const { loadConfig } = (await import(pathToFileURL(join(srcDir, 'config/index.ts')).href)) as typeof import('../src/config/index.js');
  const { composeApp } = (await import(pathToFileURL(join(srcDir, 'compose.ts')).href)) as typeof import('../src/compose.js');
  const config = loadConfig({ ...env, DATABASE_URL: `sqlite:${join(dataDir, 'observer.db')}` });
  const { app } = await composeApp(config, { logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as net.AddressInfo).port;
  const body = (await (await fetch(`http://127.0.0.1:${port}/api/v1/status/${address}`)).json()) as { online?: boolean };
  if (body.online !== true) throw new Error(`${name}: the bench server is not online`);
  return { name, port, close: () => app.close() };
}

/** `count` cached status requests over CONNECTIONS sockets, PIPELINE in flight on each. */
function batch(port: number, count: number): Promise<void> {
  const request = Buffer.from(`GET /api/v1/status/${address} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  const perSocket = Math.ceil(count / CONNECTIONS);
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      let sent = 0;
      let answered = 0;
      let tail = '';
      const send = (n: number) => {
        const k = Math.min(n, perSocket - sent);
        if (k <= 0) return;
        socket.write(Buffer.concat(Array.from({ length: k }, () => request)));
        sent += k;
      };
      socket.on('connect', () => send(PIPELINE));
      socket.on('data', (chunk: Buffer) => {
        // Count status lines; a line split across chunks is kept in `tail`.
        const text = tail + chunk.toString('latin1');
        let at = 0;
        let found = 0;
        while ((at = text.indexOf('HTTP/1.1 ', at)) !== -1) {
          if (!text.startsWith('HTTP/1.1 200', at)) reject(new Error(`answer: ${text.slice(at, at + 40)}`));
          found++;
          at += 9;
        }
        tail = text.slice(-12);
        if (tail.includes('HTTP/1.1 ')) tail = tail.slice(tail.lastIndexOf('HTTP/1.1 ') + 9);
        answered += found;
        send(found);
        if (answered >= perSocket) {
          socket.end();
          resolve();
        }
      });
      socket.on('error', reject);
    });
  return Promise.all(Array.from({ length: CONNECTIONS }, one)).then(() => undefined);
}

const sides: Side[] = [];
const old = extract(REV);
if (old) sides.push(await start(REV, old));
else console.log(`(no revision ${REV}: measuring the working tree alone)`);
sides.push(await start('tree', join(ROOT, 'src')));

for (const side of sides) await batch(side.port, REQUESTS); // warm-up
const microsPerRequest: Record<string, number[]> = {};
for (let round = 0; round < BATCHES; round++) {
  for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
    const before = process.cpuUsage();
    await batch(side.port, REQUESTS);
    const used = process.cpuUsage(before);
    (microsPerRequest[side.name] ??= []).push((used.user + used.system) / REQUESTS);
  }
}

console.log(`cached status, CPU of this process (servers + raw client) per request: ${BATCHES} alternating batches of ${fmt(REQUESTS)}, median`);
for (const side of sides) {
  const list = microsPerRequest[side.name]!;
  console.log(`  ${side.name.padEnd(12)} ${fmt(median(list), 1)} µs/req  (batches: ${list.map((v) => fmt(v, 1)).join(' ')})`);
}
if (sides.length === 2) {
  const [a, b] = sides.map((side) => median(microsPerRequest[side.name]!));
  console.log(`  tree / ${REV}: ${fmt(b! / a!, 3)}x (below 1: the tree spends less)`);
}
for (const side of sides) await side.close();
await java.close();
for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
process.exit(0);
