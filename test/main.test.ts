/**
 * The real process: start-up with bad configuration, and graceful shutdown with a request in
 * flight. Runs src/main.ts through tsx, exactly as `npm start` runs the built file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startSilentServer } from './support/hostile.js';
import { freePort } from '../scripts/ports.mjs';

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

function start(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exited, output: () => ({ stdout, stderr }) };
}

async function waitForHealth(port: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/status`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('service did not start');
}

describe('start-up', () => {
  it.each([
    ['PORT', 'eighty'],
    ['RATE_LIMIT_STATUS', '-5'],
    ['DATABASE_URL', 'mysql://nope'],
    ['DNS_SERVERS', '127.1'],
    ['TRUST_PROXY', '10.0.0.0/33'],
  ])('exits 1 with one line naming %s when it is invalid', async (name, value) => {
    const proc = start({ [name]: value });
    expect(await proc.exited).toBe(1);
    const lines = proc.output().stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(name);
  });
});

describe('a database Observer cannot use', () => {
  const dir = mkdtempSync(join(tmpdir(), 'observer-main-db-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    ['is not a database', 'not-a-database.db', () => Buffer.from('name,players\nplay.example.net,12\n'), 'is not an SQLite database'],
    ['has an SQLite header and garbage after it', 'garbage.db', () => Buffer.concat([Buffer.from('SQLite format 3\0', 'latin1'), randomBytes(8192)]), 'cannot be read as an SQLite database'],
  ])('exits 1 with one line naming a file that %s, and leaves the file as it was', async (_what, name, bytes, reason) => {
    const path = join(dir, name);
    const content = bytes();
    writeFileSync(path, content);
    const proc = start({ DATABASE_URL: `sqlite:${path}`, PORT: '0' });
    expect(await proc.exited).toBe(1);
    const lines = proc.output().stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(path);
    expect(lines[0]).toContain(reason);
    expect(readFileSync(path).equals(content)).toBe(true);
    expect(readdirSync(dir).filter((f) => f.startsWith(name))).toEqual([name]);
  });
});

describe('a new database', () => {
  it('has its tables before the service listens: the first requests get history, trends and stats, not 503 migrating', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'observer-main-new-'));
    const port = await freePort();
    try {
      const proc = start({ PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: `sqlite:${join(dir, 'observer.db')}` });
      let first: Response | null = null;
      for (let i = 0; i < 600 && first === null; i++) {
        first = await fetch(`http://127.0.0.1:${port}/api/v1/trends`).catch(() => null);
        if (first === null) await new Promise((r) => setTimeout(r, 50));
      }
      expect(first?.status).toBe(200);
      const stats = await fetch(`http://127.0.0.1:${port}/api/v1/stats`);
      expect(stats.status).toBe(200);
      const health = (await (await fetch(`http://127.0.0.1:${port}/api/v1/status`)).json()) as Record<string, unknown>;
      expect(health).toMatchObject({ status: 'OK', migration: null });
      proc.child.kill('SIGTERM');
      expect(await proc.exited).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('shutdown', () => {
  // Two processes start through tsx: slow on a loaded two-core machine, hence the longer timeout.
  it('on SIGTERM finishes the request in flight, stops accepting and exits 0', { timeout: 90_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'observer-main-'));
    const port = await freePort();
    const silent = await startSilentServer();
    try {
      const proc = start({
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: `sqlite:${join(dir, 'observer.db')}`,
        TARGET_ALLOWLIST: '127.0.0.0/8',
        PING_TIMEOUT_MS: '1500',
      });
      await waitForHealth(port);
      const inFlight = fetch(`http://127.0.0.1:${port}/api/v1/status/127.0.0.1:${silent.port}`);
      for (let i = 0; i < 100 && silent.accepted() === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(silent.accepted()).toBe(1);
      proc.child.kill('SIGTERM');
      const res = await inFlight;
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ online: false, error: 'timed out' });
      expect(await proc.exited).toBe(0);
      await expect(fetch(`http://127.0.0.1:${port}/api/v1/status`)).rejects.toThrow();

      // The counters and the check were flushed on shutdown: a new process sees them.
      const again = start({ PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: `sqlite:${join(dir, 'observer.db')}` });
      await waitForHealth(port);
      const stats = (await (await fetch(`http://127.0.0.1:${port}/api/v1/stats`)).json()) as Record<string, unknown>;
      expect(stats).toMatchObject({ serverQueries: 1, totalChecks: 1, offlineServers: 1 });
      expect(stats.totalRequests).toBeGreaterThanOrEqual(2);
      expect(stats.recentChecks).toEqual([
        expect.objectContaining({ hostname: '127.0.0.1', port: silent.port, edition: 'java', online: false }),
      ]);
      again.child.kill('SIGTERM');
      expect(await again.exited).toBe(0);
    } finally {
      await silent.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
