/**
 * A stop while deliveries hang: the real process (`node dist/main.js`, built first), SIGTERM
 * while its deliveries and a test delivery wait on a blackholed webhook receiver (it never
 * answers, within a 30 s WATCH_DELIVERY_TIMEOUT_MS). The watch loops stop within their
 * deadline, the process exits 0 (not the forced exit after 15 s, which is 1), every check it
 * answered is in the history after a restart, and the events cut off are due again with no
 * attempt spent (they will be sent again: at least once).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { hashToken } from '../../src/watch/tokens.js';
import { waitForHealth } from '../support/instances.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { freePort } from '../../scripts/ports.mjs';
import { watchRow } from '../support/watch-rows.js';
import { startWebhookReceiver, until, type WebhookReceiver } from '../support/webhook-receiver.js';

const ROOT = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'observer-watch-stop-'));
const database = join(dir, 'observer.db');
const TOKEN = 'management-token-of-the-test-watch-0000000';
const ANSWERED = 20;
let blackhole: WebhookReceiver;
let server: RunningJavaServer;
const children: ChildProcess[] = [];

beforeAll(async () => {
  const build = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`build failed: ${build.stdout}${build.stderr}`);
  blackhole = await startWebhookReceiver({ hold: true });
  server = await startJavaServer({ motd: 'stopping' });
}, 180_000);

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await blackhole?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Verified watches on the blackholed receiver, with an event due now each. */
async function seedWatches(): Promise<void> {
  const store = await openStore({ database: { kind: 'sqlite', path: database }, checkRetentionDays: 30 });
  const now = Date.now();
  for (let i = 0; i < 4; i += 1) {
    const id = `00000000-0000-4000-8000-00000000000${i}`;
    const row = watchRow(id, {
      token_hash: hashToken(TOKEN),
      address: `127.0.0.1:${server.port}`,
      host: '127.0.0.1',
      webhook_url: blackhole.url(`/hold/${i}`),
      verified_at: now,
      proof_seen_at: now,
      expires_at: null,
      state: 'online',
      next_check_at: now + 3_600_000,
    });
    await store.watches.insert(row);
    await store.watches.saveObservation(row, { state: 'offline', failures: 1, fail_since: now, above: 0, last_checked_at: now }, { kind: 'offline', body: '{"event":"offline"}', now });
  }
  await store.close();
}

function start(port: number): { child: ChildProcess; exited: Promise<number | null>; output: () => string } {
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: `sqlite:${database}`,
      DNS_SERVERS: '127.0.0.1:5353',
      TARGET_ALLOWLIST: '127.0.0.0/8',
      WEBHOOK_ALLOWLIST: '127.0.0.0/8',
      WATCH_DELIVERY_TIMEOUT_MS: '30000',
      RATE_LIMIT_STATUS: '10000',
      ICMP: 'off',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => output };
}

it('exits in time with deliveries in flight, and every answered check is written', { timeout: 120_000 }, async () => {
  await seedWatches();
  const port = await freePort();
  const observer = start(port);
  await waitForHealth(port);
  const base = `http://127.0.0.1:${port}/api/v1`;
  // Two deliveries held (two in flight per webhook host), and a test delivery held too.
  expect(await until(() => blackhole.requests.length >= 2, 30_000)).toBe(true);
  const test = fetch(`${base}/watches/00000000-0000-4000-8000-000000000003/test`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
  expect(await until(() => blackhole.requests.some((r) => String(r.headers['webhook-id']).includes('_test_')), 30_000)).toBe(true);

  // Checks answered right before the signal: some are still in the write buffer then.
  const addresses = Array.from({ length: ANSWERED }, (_, i) => `stop${i}.any.observer.test:${server.port}`);
  const answers = await Promise.all(addresses.map((address) => fetch(`${base}/status/${address}`)));
  expect(answers.map((res) => res.status)).toEqual(addresses.map(() => 200));
  observer.child.kill('SIGTERM');

  // The test delivery in flight is cut off and answered; the process exits 0, not forced.
  const tested = await test;
  expect(tested.status).toBe(200);
  expect(await tested.json()).toEqual({ delivered: false, result: 'failed', status_code: null });
  expect(await observer.exited, observer.output()).toBe(0);

  // After a restart: every answered check is in the history.
  const seeds = await openStore({ database: { kind: 'sqlite', path: database }, checkRetentionDays: 30 });
  const cutOff = await seeds.watches.dueEvents(Date.now() + 60_000, 10);
  await seeds.close();
  expect(cutOff.map((e) => [e.sequence, e.attempts, e.lease_token])).toEqual([
    [1, 0, null],
    [1, 0, null],
    [1, 0, null],
    [1, 0, null],
  ]);
  const again = start(port);
  await waitForHealth(port);
  for (const address of addresses) {
    const history = (await (await fetch(`${base}/history/${address}`)).json()) as { checks: number };
    expect(history.checks, address).toBe(1);
  }
  again.child.kill('SIGTERM');
  expect(await again.exited).toBe(0);
});
