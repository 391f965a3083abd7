/**
 * compose.yaml started as an operator starts it, `docker-compose up -d --build` (Debian's
 * docker-compose, talking to podman's Docker-compatible API through test/support/compose-api-shim.ts),
 * with the test's settings from test/deploy/compose.test.yaml layered on it, for the compose
 * test and the cluster bench.
 *
 * No image registry is reachable here. scripts/container.sh builds the service's image first
 * (its base made from Debian's packages, podman's layer cache filled over the host's network),
 * so that compose's own build finds every layer cached, and makes local stand-ins under the
 * names of the images compose.yaml pulls (test/deploy/stand-ins/). podman schedules health
 * checks with systemd timers, and this machine has no systemd: the stack runs each container's
 * check itself, every second while compose waits on them, and when asked to.
 *
 * The Minecraft server the instances look up lives on a host of the stack's own inside the
 * compose network (a network namespace, test/support/namespace-host.ts): dnsmasq answers every
 * name under `mc.observer.test` with its address, and a minecraft-protocol server
 * (test/deploy/compose-target.ts) answers on port 25565. Requests reach the cluster through
 * nginx's port, published on loopback only. One stack at a time on a machine (compose.yaml's
 * subnet is fixed): a stack waits for a lock file that another test run holds.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { freePort } from '../../scripts/ports.mjs';
import { startNamespaceHost, type NamespaceHost } from './namespace-host.js';
import { startComposeApiShim } from './compose-api-shim.js';
import { containerScript, podman } from './podman.js';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Each run's project (and so its network and volume) is named after its process: podman 4.3
 * can keep an address of a removed container allocated in its record of a removed network, and
 * a network of the same name made later would find the address taken.
 */
const PROJECT_PREFIX = 'observer-compose-test-';
export const COMPOSE_PROJECT = `${PROJECT_PREFIX}${process.pid}`;
const OVERRIDE = 'test/deploy/compose.test.yaml';
/** The zone the target host's dnsmasq answers, and the port its Minecraft server listens on. */
export const TARGET_ZONE = 'mc.observer.test';
export const TARGET_PORT = 25565;
const LOCK = join(tmpdir(), 'observer-compose-test.lock');

export interface ComposeStack {
  /** nginx's published port on loopback. */
  url: string;
  /** The compose network's subnet, and the target host's address on it. */
  subnet: string;
  target: { address: string; peers: Set<string> };
  container(service: string): string;
  compose(...args: string[]): Promise<string>;
  /** docker-compose with one more file of settings after the test's (a new release, test/support/compose-release.ts). */
  composeWith(file: string, ...args: string[]): Promise<string>;
  podman(...args: string[]): Promise<string>;
  /** Runs the service's health check once, as podman's timer would; the status it leaves. */
  healthCheck(service: string): Promise<string>;
  /** Runs the service's health check every 500 ms until it is healthy (at most `ms`). */
  waitHealthy(service: string, ms?: number): Promise<void>;
  /** GET `path` of one instance, asked from inside its container. */
  ask(service: string, path: string): Promise<InstanceAnswer>;
  /** One SQL statement in PostgreSQL's container, as the database's owner; its rows, unaligned. */
  psql(statement: string): Promise<string>;
  /** GET /metrics of one instance, with its token, asked from inside its container. */
  metrics(service: string): Promise<string>;
  down(): Promise<void>;
}

export interface InstanceAnswer {
  status: number;
  retryAfter: string | null;
  body: string;
}

interface ComposeFile {
  services: Record<string, { image?: string; build?: unknown; environment?: Record<string, string> }>;
  networks: Record<string, { ipam?: { config?: Array<{ subnet?: string }> } }>;
}

/** compose.yaml, its `<<` merge keys applied as compose applies them. */
export function readCompose(file = 'compose.yaml'): ComposeFile {
  return parse(readFileSync(file, 'utf8'), { merge: true }) as ComposeFile;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits for the machine's one compose stack; the lock file holds this process's id. */
async function takeLock(): Promise<() => void> {
  const deadline = Date.now() + 30 * 60_000;
  for (;;) {
    try {
      writeFileSync(LOCK, String(process.pid), { flag: 'wx' });
      return () => rmSync(LOCK, { force: true });
    } catch {
      const holder = Number(readFileSync(LOCK, 'utf8').trim() || 0);
      if (holder === process.pid) throw new Error('this process already runs the compose stack');
      if (!holder || !alive(holder)) rmSync(LOCK, { force: true });
      else if (Date.now() > deadline) throw new Error(`${LOCK}: process ${holder} has held the compose stack for 30 minutes`);
      else await sleep(2_000);
    }
  }
}

type ComposeCommand = (project: string, files: string[], ...args: string[]) => Promise<string>;

/** What an earlier run killed before its end left: its compose project, its namespace. */
async function removeLeftovers(compose: ComposeCommand): Promise<void> {
  const networks = await podman('network', 'ls', '--format', '{{.Name}}');
  for (const name of networks.split('\n')) {
    const pid = new RegExp(`^${PROJECT_PREFIX}(\\d+)_`).exec(name)?.[1];
    if (pid !== undefined && !alive(Number(pid))) await compose(`${PROJECT_PREFIX}${pid}`, [], 'down', '--volumes', '--remove-orphans');
  }
  const { stdout } = await run('ip', ['netns', 'list']);
  for (const name of stdout.split('\n').map((line) => line.split(' ')[0] ?? '')) {
    const pid = /^obs-(\d+)$/.exec(name)?.[1];
    if (pid !== undefined && !alive(Number(pid))) await run('ip', ['netns', 'del', name]).catch(() => undefined);
  }
}

/** docker-compose on compose.yaml and the test's settings, through the API at `socket`. */
function composeCommand(socket: string, env: Record<string, string>): ComposeCommand {
  return async (project, files, ...args) => {
    const command = ['-p', project, ...['compose.yaml', OVERRIDE, ...files].flatMap((f) => ['-f', f]), ...args];
    const options = { env: { ...process.env, DOCKER_HOST: `unix://${socket}`, ...env }, timeout: 600_000, maxBuffer: 64 << 20 };
    const { stdout, stderr } = await run('docker-compose', command, options).catch((error: { stderr?: string }) => {
      throw new Error(`docker-compose ${args.join(' ')} failed: ${String(error.stderr ?? error).split('\n').slice(-30).join('\n')}`);
    });
    return `${stdout}${stderr}`;
  };
}

/** podman's Docker-compatible API on a socket of its own, for docker-compose. */
async function startApiService(socket: string): Promise<ChildProcess> {
  const child = spawn('bash', ['scripts/container.sh', 'podman', 'system', 'service', '--time', '0', `unix://${socket}`], { stdio: 'ignore' });
  for (let i = 0; i < 200; i += 1) {
    if (existsSync(socket) && (await ping(socket))) return child;
    if (child.exitCode !== null) break;
    await sleep(100);
  }
  child.kill('SIGKILL');
  throw new Error('podman system service did not answer on its socket');
}

function ping(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ socketPath: socket, path: '/_ping' }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}

/** Runs, each second until stopped, the health check of every container of the stack not yet healthy. */
function runHealthChecks(): { stop(): Promise<void> } {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const names = await podman('ps', '--filter', `label=com.docker.compose.project=${COMPOSE_PROJECT}`, '--filter', 'health=starting', '--format', '{{.Names}}').catch(() => '');
      await Promise.all(names.split('\n').filter(Boolean).map((name) => podman('healthcheck', 'run', name).catch(() => '')));
      await sleep(1_000);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

/** dnsmasq and the Minecraft server on the target host; the addresses its server was pinged from. */
async function startTarget(host: NamespaceHost): Promise<Set<string>> {
  const dns = host.spawn('dnsmasq', [
    '--keep-in-foreground', '--no-resolv', '--no-hosts', '--no-poll', '--bind-interfaces', '--user=root',
    `--listen-address=${host.address}`, '--port=53', '--pid-file', '--log-facility=-',
    `--local=/${TARGET_ZONE}/`, `--address=/${TARGET_ZONE}/${host.address}`,
  ]);
  dns.stderr!.resume();
  dns.stdout!.resume();
  const server = host.spawn(process.execPath, ['--import', 'tsx', 'test/deploy/compose-target.ts', host.address, String(TARGET_PORT)]);
  const peers = new Set<string>();
  let errors = '';
  server.stderr!.on('data', (d: Buffer) => (errors += d.toString()));
  const listening = new Promise<void>((resolve, reject) => {
    createInterface({ input: server.stdout! }).on('line', (line) => {
      if (line === 'listening') resolve();
      else if (line.startsWith('peer ')) peers.add(line.slice(5));
    });
    server.once('exit', (code) => reject(new Error(`the target's Minecraft server exited ${code}: ${errors}`)));
  });
  await listening;
  return peers;
}

/** The address `suffix` of a /24 or wider IPv4 subnet (172.29.80.0/24, 100 -> 172.29.80.100). */
function addressIn(subnet: string, suffix: number): { address: string; prefixLength: number } {
  const [base, prefix] = subnet.split('/');
  return { address: base!.replace(/\.\d+$/, `.${suffix}`), prefixLength: Number(prefix) };
}

export async function startComposeStack(): Promise<ComposeStack> {
  const release = await takeLock();
  const dir = mkdtempSync(join(tmpdir(), 'observer-compose-'));
  const cleanups: Array<() => Promise<unknown>> = [async () => rmSync(dir, { recursive: true, force: true }), async () => release()];
  const cleanUp = async () => {
    for (const step of cleanups.reverse()) await step().catch(() => undefined);
  };
  try {
    await containerScript('build', '.test-runtime/compose-build.log');
    await containerScript('stand-ins', '.test-runtime/compose-stand-ins.log');
    const api = await startApiService(join(dir, 'podman.sock'));
    cleanups.push(async () => {
      api.kill('SIGTERM');
      if (api.exitCode === null) await new Promise((resolve) => api.once('exit', resolve));
    });
    const socket = join(dir, 'compose.sock');
    const shim = await startComposeApiShim(socket, join(dir, 'podman.sock'));
    cleanups.push(() => new Promise((resolve) => shim.close(resolve)));
    const port = await freePort();
    const composeAs = composeCommand(socket, { POSTGRES_PASSWORD: randomBytes(12).toString('hex'), OBSERVER_PORT: `127.0.0.1:${port}` });
    await removeLeftovers(composeAs);
    const composeWith = (file: string | null, ...args: string[]) => composeAs(COMPOSE_PROJECT, file === null ? [] : [file], ...args);
    const compose = (...args: string[]) => composeWith(null, ...args);
    cleanups.push(() => compose('down', '--volumes', '--remove-orphans', '--timeout', '20'));
    const checks = runHealthChecks();
    try {
      await compose('up', '--detach', '--build');
    } finally {
      await checks.stop();
    }
    return await assemble({ url: `http://127.0.0.1:${port}`, compose, composeWith, cleanups, cleanUp });
  } catch (error) {
    await cleanUp();
    throw error;
  }
}

interface Parts {
  url: string;
  compose: (...args: string[]) => Promise<string>;
  composeWith: (file: string, ...args: string[]) => Promise<string>;
  cleanups: Array<() => Promise<unknown>>;
  cleanUp: () => Promise<void>;
}

/** The target host on the compose network, and the stack's handles. */
async function assemble({ url, compose, composeWith, cleanups, cleanUp }: Parts): Promise<ComposeStack> {
  const [network, definition] = Object.entries(readCompose().networks)[0]!;
  const subnet = definition.ipam?.config?.[0]?.subnet ?? '';
  const bridge = await podman('network', 'inspect', `${COMPOSE_PROJECT}_${network}`, '--format', '{{.NetworkInterface}}');
  const host = await startNamespaceHost({ bridge, ...addressIn(subnet, 100) });
  cleanups.push(() => host.close());
  const peers = await startTarget(host);
  const container = (service: string) => `${COMPOSE_PROJECT}_${service}_1`;
  const healthCheck = async (service: string) => {
    await podman('healthcheck', 'run', container(service)).catch(() => '');
    return podman('inspect', '--format', '{{.State.Health.Status}}', container(service));
  };
  const token = readCompose(OVERRIDE).services['observer-1']?.environment?.METRICS_TOKEN ?? '';
  const ask = async (service: string, path: string): Promise<InstanceAnswer> =>
    JSON.parse(
      await podman('exec', container(service), 'node', '-e',
        `fetch('http://127.0.0.1:8080${path}', { headers: { authorization: 'Bearer ${token}' } })
          .then(async (r) => process.stdout.write(JSON.stringify({ status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.text() })))`),
    ) as InstanceAnswer;
  return {
    url,
    subnet,
    target: { address: host.address, peers },
    container,
    compose,
    composeWith,
    podman,
    healthCheck,
    async waitHealthy(service, ms = 120_000) {
      const deadline = Date.now() + ms;
      while ((await healthCheck(service)) !== 'healthy') {
        if (Date.now() > deadline) throw new Error(`${service} not healthy after ${ms} ms:\n${await podman('logs', '--tail', '30', container(service))}`);
        await sleep(500);
      }
    },
    ask,
    psql: (statement) => podman('exec', container('postgres'), 'psql', '--username', 'observer', '--dbname', 'observer', '--tuples-only', '--no-align', '--command', statement),
    metrics: async (service) => (await ask(service, '/metrics')).body,
    down: cleanUp,
  };
}
