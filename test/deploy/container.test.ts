/**
 * The container image, built from the Dockerfile by scripts/container.sh (podman, on a base image
 * made from Debian's packages and the npm registry's Node) and run as an operator runs it: health
 * answers and the image's HEALTHCHECK passes, a look-up reaches a real Minecraft server on
 * loopback, the service runs as a non-root user holding CAP_NET_RAW only when given it, SIGTERM
 * stops it with exit code 0, and the SQLite file on the data volume outlives the container.
 * Prints the image's size. Also checks that compose.yaml's nginx sends requests to the compose
 * file's own instances. Containers use the host's network and listen on 127.0.0.1 only.
 *
 * The first build takes minutes (base image, native addons); later ones reuse podman's cache.
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { waitForHealth } from '../support/instances.js';
import { containerScript, podman } from '../support/podman.js';
import { freePort } from '../../scripts/ports.mjs';
import { LOOPBACK_ALLOWLIST } from '../support/services.js';

const run = promisify(execFile);
/** The uid and gid the Dockerfile gives the service. */
const SERVICE_UID = 10001;
/** CAP_NET_RAW's bit in /proc/PID/status capability masks. */
const CAP_NET_RAW = 1n << 13n;
const BUILD_LOG = '.test-runtime/container-build.log';

let image = '';
let dataDir = '';
let java: RunningJavaServer;
const containers: string[] = [];

interface Started {
  name: string;
  port: number;
  url: string;
}

/** Runs the image detached on a free loopback port with the data directory as its volume. */
async function startContainer(extraArgs: string[]): Promise<Started> {
  const port = await freePort();
  const name = `observer-test-${process.pid}-${containers.length}`;
  containers.push(name);
  await podman(
    'run', '--detach', '--name', name, '--network', 'host',
    // No timer for the HEALTHCHECK (podman schedules it with systemd); the test runs it itself.
    '--health-interval', 'disable',
    '--volume', `${dataDir}:/app/data`,
    '--env', `PORT=${port}`, '--env', 'HOST=127.0.0.1', '--env', 'LOG_LEVEL=warn',
    '--env', `TARGET_ALLOWLIST=${LOOPBACK_ALLOWLIST.join(',')}`,
    ...extraArgs,
    image,
  );
  try {
    await waitForHealth(port);
  } catch (error) {
    throw new Error(`${String(error)}\n${await podman('logs', name).catch(() => '')}`);
  }
  return { name, port, url: `http://127.0.0.1:${port}` };
}

/** Process 1's command line (the init), and the Uid line and capability masks of its child, the service. */
async function mainProcess(name: string): Promise<{ init: string; uids: number[]; effective: bigint; cmdline: string }> {
  const init = (await podman('exec', name, 'cat', '/proc/1/cmdline')).replaceAll('\0', ' ').trim();
  const pid = (await podman('exec', name, 'cat', '/proc/1/task/1/children')).trim().split(/\s+/)[0];
  const status = await podman('exec', name, 'cat', `/proc/${pid}/status`);
  const cmdline = (await podman('exec', name, 'cat', `/proc/${pid}/cmdline`)).replaceAll('\0', ' ').trim();
  const line = (key: string) => status.split('\n').find((l) => l.startsWith(`${key}:`))?.split(/\s+/).slice(1) ?? [];
  return { init, uids: line('Uid').map(Number), effective: BigInt(`0x${line('CapEff')[0] ?? '0'}`), cmdline };
}

/** Sends SIGTERM only and waits for the container to end; its exit code. */
async function stopWithSigterm(name: string): Promise<number> {
  await podman('kill', '--signal', 'TERM', name);
  return Number(await podman('wait', name));
}

describe('the container image', () => {
  beforeAll(async () => {
    image = await containerScript('build', BUILD_LOG);
    console.log(`container image ${image}: ${await podman('image', 'inspect', '--format', '{{.Size}}', image)} bytes`);
    dataDir = mkdtempSync(join(tmpdir(), 'observer-container-test-'));
    // The volume belongs to the service's user, as a named volume would.
    chownSync(dataDir, SERVICE_UID, SERVICE_UID);
    java = await startJavaServer({ motd: 'Container test', onlinePlayers: 3, maxPlayers: 20 });
  }, 40 * 60_000);

  afterAll(async () => {
    for (const name of containers) await podman('rm', '--force', name).catch(() => '');
    await java?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }, 120_000);

  let withRaw: Started;

  it('starts as a non-root user with CAP_NET_RAW, given --cap-add NET_RAW, and passes its HEALTHCHECK', async () => {
    withRaw = await startContainer(['--cap-add', 'NET_RAW']);
    const health = await fetch(`${withRaw.url}/api/v1/status`);
    expect(health.status).toBe(200);
    expect(((await health.json()) as { status: string }).status).toBe('OK');
    await podman('healthcheck', 'run', withRaw.name);

    const main = await mainProcess(withRaw.name);
    // An init that forwards signals and reaps, with the service beneath it.
    expect(main.init).toMatch(/^\/usr\/local\/bin\/tini -- /);
    expect(main.cmdline).toContain('dist/main.js');
    expect(main.uids).toEqual([SERVICE_UID, SERVICE_UID, SERVICE_UID, SERVICE_UID]);
    // CAP_NET_RAW and nothing else.
    expect(main.effective).toBe(CAP_NET_RAW);
  });

  it('looks up a Minecraft server on loopback, with an ICMP echo', async () => {
    const res = await fetch(`${withRaw.url}/api/v1/status/127.0.0.1:${java.port}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ online: true, ip_address: '127.0.0.1', players: { online: 3, max: 20 }, icmp: true });
    expect(body.version).toEqual({ name: expect.any(String), protocol: expect.any(Number) });
    expect((body.motd as { clean: string }).clean).toBe('Container test');
  });

  it('exits 0 on SIGTERM, leaving the SQLite file on its volume', async () => {
    expect(await stopWithSigterm(withRaw.name)).toBe(0);
    expect(existsSync(join(dataDir, 'observer.db'))).toBe(true);
  });

  it('starts without CAP_NET_RAW (icmp null) and finds the history of the container before it', async () => {
    const plain = await startContainer(['--cap-drop', 'NET_RAW']);
    const main = await mainProcess(plain.name);
    expect(main.uids[0]).toBe(SERVICE_UID);
    expect(main.effective).toBe(0n);

    // The check the first container recorded, read from the same volume.
    const history = await fetch(`${plain.url}/api/v1/history/127.0.0.1:${java.port}`);
    expect(history.status).toBe(200);

    const res = await fetch(`${plain.url}/api/v1/status/127.0.0.1:${java.port}`);
    expect(await res.json()).toMatchObject({ online: true, icmp: null });
    expect(await stopWithSigterm(plain.name)).toBe(0);
  });
});

describe('compose.yaml', () => {
  const compose = parse(readFileSync('compose.yaml', 'utf8'), { merge: true }) as {
    services: Record<string, { build?: string; environment?: Record<string, string>; networks?: unknown }>;
  };
  const nginxConf = readFileSync('deploy/compose/nginx.conf', 'utf8');

  it("sends nginx's upstream to the compose file's two observer instances, on the image's port", () => {
    const instances = Object.entries(compose.services)
      .filter(([, service]) => service.build === '.')
      .map(([name]) => `${name}:8080`);
    const upstream = (backup: boolean) =>
      [...nginxConf.matchAll(/^\s*server ([\w.-]+:\d+)( backup)?/gm)].filter((m) => (m[2] !== undefined) === backup).map((m) => m[1]);
    expect(instances).toHaveLength(2);
    // Each instance once, and once more as a backup (never left out: see the file).
    expect(upstream(false)).toEqual(instances);
    expect(upstream(true)).toEqual(instances);
    for (const name of ['postgres', 'redis', 'nginx']) expect(compose.services).toHaveProperty(name);
  });

  it('has an nginx configuration nginx accepts', async () => {
    // nginx -t resolves the upstream names: here they stand for loopback.
    const prefix = mkdtempSync(join(tmpdir(), 'observer-compose-nginx-'));
    try {
      const conf = join(prefix, 'nginx.conf');
      writeFileSync(conf, nginxConf.replace(/server observer-\d+:/g, 'server 127.0.0.1:'));
      await run('nginx', ['-t', '-q', '-p', prefix, '-c', conf, '-g', `pid ${join(prefix, 'nginx.pid')};`]);
    } finally {
      rmSync(prefix, { recursive: true, force: true });
    }
  });
});
