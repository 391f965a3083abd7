/**
 * A test's own redis-server on a free loopback port, so that it can be killed, paused and
 * restarted without touching the shared Redis other test runs use.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../scripts/ports.mjs';

export interface OwnRedis {
  port: number;
  url: string;
  /** SIGKILL: the process dies with its data (nothing is persisted). */
  kill(): Promise<void>;
  /** SIGSTOP / SIGCONT: connections stay open, commands get no answer. */
  pause(): void;
  resume(): void;
  /** Starts a new, empty redis-server on the same port. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

async function waitForPing(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; attempt < 200 && Date.now() < deadline; attempt += 1) {
    const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
    probe.on('error', () => {});
    try {
      await probe.connect();
      if ((await probe.ping()) === 'PONG') return;
    } catch {
      // not up yet
    } finally {
      probe.disconnect();
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`redis-server on port ${port} did not answer`);
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'observer-redis-'));
  let child: ChildProcess | null = null;

  const start = async () => {
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--loglevel', 'warning'],
      { stdio: 'ignore' },
    );
    await waitForPing(port);
  };
  const exited = (proc: ChildProcess) =>
    proc.exitCode !== null || proc.signalCode !== null ? Promise.resolve() : new Promise<void>((resolve) => proc.once('exit', () => resolve()));

  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    start,
    async kill() {
      const proc = child;
      if (!proc) return;
      proc.kill('SIGCONT');
      proc.kill('SIGKILL');
      await exited(proc);
      child = null;
    },
    pause() {
      child?.kill('SIGSTOP');
    },
    resume() {
      child?.kill('SIGCONT');
    },
    async stop() {
      const proc = child;
      if (proc) {
        proc.kill('SIGCONT');
        proc.kill('SIGKILL');
        await exited(proc);
      }
      child = null;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
