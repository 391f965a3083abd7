/**
 * What a `kill -9` loses: `npm run bench -- kill-window`.
 *
 * Starts the service as `npm start` runs it (SQLite, default settings but for the test network
 * and limits raised out of the way), puts an uncached load on it from another process (a new
 * server name per request, each answered by a canned-bytes status server, 32 at a time), kills
 * it with SIGKILL a few seconds in, then opens its database and counts the answered look-ups
 * whose check is missing: how many, and how long before the kill they were answered. Three
 * rounds. Every check answered before the last commit is there; what is lost is the commit
 * window (50 ms) and the commit in progress.
 */
import { fork, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sqliteBinding } from '../src/store/sqlite/binding.js';
import { freePort } from '../scripts/ports.mjs';
import { serviceEnv, startCommand, waitForHealth } from './support.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const mcServer = fork(join(ROOT, 'bench/minimal-server.ts'), ['--serve'], { execArgv: process.execArgv, stdio: 'inherit' });
const mcPort = await new Promise<number>((resolve) => mcServer.once('message', (message) => resolve((message as { port: number }).port)));

/** The load: `concurrency` loops of look-ups of new names; prints `name answeredAt` per 200. */
const LOADER = `
const [base, prefix, concurrency] = process.argv.slice(1);
let n = 0;
async function loop() {
  for (;;) {
    const name = prefix + '-' + n++ + '.any.observer.test';
    const response = await fetch(base + '/api/v1/status/' + name + ':${mcPort}').catch(() => null);
    if (!response) return;
    const body = await response.json().catch(() => null);
    if (response.status === 200 && body && body.online) process.stdout.write(name + ' ' + Date.now() + '\\n');
  }
}
for (let i = 0; i < Number(concurrency); i++) loop();
`;

async function round(index: number): Promise<{ answered: number; lost: number; spanMs: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'observer-kill-'));
  try {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = serviceEnv(port, dir, { RATE_LIMIT_STATUS: '10000000', TARGET_PINGS_PER_MINUTE: '100000', NEW_SERVERS_PER_CLIENT_PER_DAY: '1000000', ICMP: 'off' });
    const service = spawn(...startCommand(ROOT), { cwd: ROOT, env, stdio: 'ignore' });
    await waitForHealth(base, service);
    const loader = spawn(process.execPath, ['-e', LOADER, base, `kill${index}`, '32'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    loader.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    await new Promise((resolve) => setTimeout(resolve, 4000));
    const killedAt = Date.now();
    service.kill('SIGKILL');
    await new Promise((resolve) => service.once('exit', resolve));
    loader.kill('SIGKILL');
    const answered = out
      .split('\n')
      .filter((line) => line.includes(' '))
      .map((line) => line.split(' '))
      .filter(([, at]) => Number(at) <= killedAt);
    const db = sqliteBinding().open(join(dir, 'observer.db'), { readonly: true });
    const known = db.prepare('SELECT 1 FROM servers s JOIN checks c ON c.server = s.sid WHERE s.host = ?');
    const lost = answered.filter(([name]) => known.all(name).length === 0);
    db.close();
    const spanMs = lost.length === 0 ? 0 : killedAt - Math.min(...lost.map(([, at]) => Number(at)));
    return { answered: answered.length, lost: lost.length, spanMs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`kill -9 under an uncached load, ${new Date().toISOString()}, Node ${process.version}`);
try {
  for (let i = 0; i < ROUNDS; i++) {
    const r = await round(i);
    console.log(`  round ${i + 1}: ${r.answered.toLocaleString('en-US')} look-ups answered before the kill; ${r.lost} checks lost, all answered within ${r.spanMs} ms of it`);
  }
} finally {
  mcServer.kill('SIGTERM');
}
