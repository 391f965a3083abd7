/**
 * Backups as docs/operations.md gives them, with the real tools, taken while a real service
 * process serves uncached status look-ups (each a new loopback port, so each writes a check, a
 * look-up and counters): SQLite's `VACUUM INTO` with the sqlite3 command-line tool, PostgreSQL's
 * `pg_dump --format=custom` and `pg_restore`. A second service started on the restored copy
 * answers /history and /trends as the original does. The copy is one snapshot of a database
 * that went on changing: a server looked up once is in it with its whole history or not at
 * all, /stats counts exactly the servers in it, and its all-time counters (written in the
 * group commit of their check, or the next one) count those servers and less than the
 * original counts after the load.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { startInstance, type Instance } from '../support/instances.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres-databases.js';
import { LOOPBACK_ALLOWLIST } from '../support/services.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'observer-backup-'));
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

/** The PostgreSQL client tools, from the server's own bin directory when PATH lacks them. */
async function pgTool(name: 'pg_dump' | 'pg_restore'): Promise<string> {
  const { stdout } = await run('sh', ['-c', `command -v ${name} || ls -d /usr/lib/postgresql/*/bin/${name} | sort -V | tail -n 1`]);
  return stdout.trim().split('\n')[0]!;
}

const ENV = {
  TARGET_ALLOWLIST: LOOPBACK_ALLOWLIST.join(','),
  RATE_LIMIT_STATUS: '10000000',
  RATE_LIMIT_GENERAL: '10000000',
  NEW_SERVERS_PER_CLIENT_PER_DAY: '1000000',
  // Every port of the load is on 127.0.0.1.
  TARGET_PINGS_PER_MINUTE: '100000',
  PING_TIMEOUT_MS: '2000',
  ICMP: 'off',
};

async function json(instance: Instance, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${instance.url}${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Waits until the instance's history queue is empty (health's write_buffer). */
async function written(instance: Instance): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const { body } = await json(instance, '/api/v1/status');
    if (body.write_buffer === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('history queue never emptied');
}

/**
 * Uncached look-ups, four at a time, each of a loopback port nothing listens on (answered
 * offline at once, and recorded) until stopped; the ports looked up, in order.
 */
function uncachedLoad(instance: Instance, firstPort: number) {
  const ports: number[] = [];
  let next = firstPort;
  let stopped = false;
  let failure: unknown = null;
  const workers = Array.from({ length: 4 }, async () => {
    while (!stopped) {
      const port = next++;
      const res = await fetch(`${instance.url}/api/v1/status/127.0.0.1:${port}`);
      await res.arrayBuffer();
      if (res.status !== 200) {
        failure = new Error(`look-up of port ${port}: ${res.status}`);
        stopped = true;
      } else ports.push(port);
    }
  });
  return {
    /** Look-ups answered so far; throws once one failed. */
    done: () => {
      if (failure) throw failure;
      return ports.length;
    },
    ports,
    async stop() {
      stopped = true;
      await Promise.all(workers);
      if (failure) throw failure;
    },
  };
}

const until = async (check: () => boolean) => {
  while (!check()) await new Promise((r) => setTimeout(r, 10));
};

interface Stats {
  totalChecks: number;
  serverQueries: number;
  onlineServers: number;
  offlineServers: number;
  activePlayers: number;
}

async function backupUnderLoad(kind: string, original: Instance, servers: RunningJavaServer[], backup: () => Promise<void>, restored: () => Promise<Instance>): Promise<void> {
  for (const server of servers) expect((await fetch(`${original.url}/api/v1/status/127.0.0.1:${server.port}`)).status).toBe(200);
  await written(original);

  const load = uncachedLoad(original, 20_000);
  await until(() => load.done() >= 40);
  // The copy starts once some of the load's checks are written (the group commit runs apart
  // from the answers): the copy must hold those, and none of those answered after it.
  const firstPort = load.ports[0]!;
  while ((await fetch(`${original.url}/api/v1/history/127.0.0.1:${firstPort}?range=24h`)).status !== 200) await new Promise((r) => setTimeout(r, 10));
  const duringFrom = load.done();
  await backup();
  const duringTo = load.done();
  await until(() => load.done() >= duringTo + 20);
  await load.stop();
  await written(original);
  // Look-ups were answered while the copy was taken.
  expect(duringTo - duringFrom, kind).toBeGreaterThan(0);

  const copy = await restored();
  const both = async (path: string) => Promise.all([json(original, path), json(copy, path)]);

  const [trendsA, trendsB] = await both('/api/v1/trends?limit=50');
  expect(trendsB, kind).toEqual(trendsA);
  expect((trendsA.body.data as unknown[]).length).toBe(servers.length);
  for (const server of servers) {
    for (const range of ['24h', '7d', '30d']) {
      const [a, b] = await both(`/api/v1/history/127.0.0.1:${server.port}?range=${range}`);
      expect(a.status).toBe(200);
      expect(b, `${kind} ${range}`).toEqual(a);
    }
  }
  // Each port of the load was looked up once: in the copy with all of its history, or not at all.
  let inCopy = 0;
  for (const port of load.ports) {
    const [a, b] = await both(`/api/v1/history/127.0.0.1:${port}?range=24h`);
    expect(a.status).toBe(200);
    if (b.status === 404) continue;
    inCopy += 1;
    expect(b, `${kind} port ${port}`).toEqual(a);
  }
  // The look-ups written before the copy, none of those answered after it.
  expect(inCopy).toBeGreaterThan(0);
  expect(inCopy).toBeLessThan(load.ports.length);
  // Both services compute /stats now, for the first time (it is kept a minute).
  const [a, b] = await both('/api/v1/stats');
  const [statsA, statsB] = [a.body as unknown as Stats, b.body as unknown as Stats];
  expect(statsB).toMatchObject({ onlineServers: servers.length, offlineServers: inCopy, activePlayers: statsA.activePlayers });
  expect(statsA).toMatchObject({ onlineServers: servers.length, offlineServers: load.ports.length });
  for (const counter of ['totalChecks', 'serverQueries'] as const) {
    expect(statsB[counter]).toBeGreaterThanOrEqual(servers.length + inCopy - 4);
    expect(statsB[counter]).toBeLessThan(statsA[counter]);
  }
}

async function javaServers(): Promise<RunningJavaServer[]> {
  const servers = await Promise.all([startJavaServer({ maxPlayers: 20 }), startJavaServer({ maxPlayers: 50 })]);
  servers[0]!.setOnlinePlayers(3);
  servers[1]!.setOnlinePlayers(7);
  cleanups.push(() => Promise.all(servers.map((s) => s.close())));
  return servers;
}

it('restores a VACUUM INTO copy of SQLite taken under an uncached load to the same answers', async () => {
  const servers = await javaServers();
  const path = join(dir, 'original', 'observer.db');
  const original = await startInstance({ ...ENV, DATABASE_URL: `sqlite:${path}` });
  cleanups.push(() => original.stop());
  const copyPath = join(dir, 'copy.db');
  await backupUnderLoad(
    'SQLite',
    original,
    servers,
    async () => {
      await run('sqlite3', [path, `VACUUM INTO '${copyPath}'`]);
      const { stdout } = await run('sqlite3', [copyPath, 'PRAGMA integrity_check']);
      expect(stdout.trim()).toBe('ok');
    },
    async () => {
      const restoredPath = join(dir, 'restored', 'observer.db');
      await run('mkdir', ['-p', join(dir, 'restored')]);
      copyFileSync(copyPath, restoredPath);
      expect(existsSync(`${restoredPath}-wal`)).toBe(false);
      const copy = await startInstance({ ...ENV, DATABASE_URL: `sqlite:${restoredPath}` });
      cleanups.push(() => copy.stop());
      return copy;
    },
  );
});

it('restores a pg_dump of PostgreSQL taken under an uncached load, with pg_restore, to the same answers', async () => {
  const servers = await javaServers();
  const [source, target]: TestDatabase[] = await Promise.all([createTestDatabase('observer_backup'), createTestDatabase('observer_restore')]);
  cleanups.push(() => source!.drop(), () => target!.drop());
  const original = await startInstance({ ...ENV, DATABASE_URL: source!.url });
  cleanups.push(() => original.stop());
  const dump = join(dir, 'observer.dump');
  await backupUnderLoad(
    'PostgreSQL',
    original,
    servers,
    async () => {
      await run(await pgTool('pg_dump'), ['--format=custom', `--file=${dump}`, source!.url]);
    },
    async () => {
      await run(await pgTool('pg_restore'), ['--clean', '--if-exists', '--no-owner', `--dbname=${target!.url}`, dump]);
      const copy = await startInstance({ ...ENV, DATABASE_URL: target!.url });
      cleanups.push(() => copy.stop());
      return copy;
    },
  );
});
