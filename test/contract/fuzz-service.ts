/**
 * The service a fuzz run talks to, started as `npm start` starts it (scripts/start.sh: the
 * built dist/main.js with its NODE_OPTIONS; the test setup builds dist) in a process of its
 * own, with ICMP and load shedding as in production. Only what a test environment needs is
 * set: loopback allowed as a target and a webhook host, the test DNS server, 2,000 clients
 * behind a trusted proxy, a small body limit. Its JSON log is read as it comes, for what the
 * instance announces (a failed history read), and its metrics for what it shed.
 *
 * `preload` is a module node loads first (`--import`): the tests of the fuzz plant a fault
 * with one (planted-fault.mjs), which no production start can reach.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from '../../scripts/ports.mjs';

export interface FuzzService {
  origin: string;
  /** The log lines so far, parsed. */
  log: Array<Record<string, unknown>>;
  /** The count of renders and pings shed so far (`observer_shed_total`, all labels). */
  shed(): Promise<number>;
  /** When history reads failed (the store's log lines), epoch milliseconds. */
  storeFailures(): number[];
  /** Everything it wrote, for a report. */
  output(): string;
  stop(): Promise<void>;
}

const METRICS_TOKEN = 'fuzz-metrics-token';

export interface FuzzServiceOptions {
  /** Directory for its SQLite database. */
  dir: string;
  env: Record<string, string>;
  preload?: string;
}

export async function startFuzzService(options: FuzzServiceOptions): Promise<FuzzService> {
  const port = await freePort();
  const child = spawn('sh', ['scripts/start.sh', ...(options.preload ? ['--import', options.preload] : [])], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite:${join(options.dir, `observer-${port}.db`)}`,
      DNS_SERVERS: '127.0.0.1:5353',
      TARGET_ALLOWLIST: '127.0.0.0/8,::1/128',
      WEBHOOK_ALLOWLIST: '127.0.0.0/8,::1/128',
      TRUST_PROXY: 'true',
      METRICS_TOKEN,
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log: Array<Record<string, unknown>> = [];
  let output = '';
  let pending = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      try {
        log.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // not a log line
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const origin = `http://127.0.0.1:${port}`;
  await ready(origin, child, () => output);
  return {
    origin,
    log,
    output: () => output,
    shed: async () => shedCount(origin),
    storeFailures: () => log.filter((entry) => entry.msg === 'history store').map((entry) => Number(entry.time)),
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Waits until health answers with no migration running; throws with its output if it exits first. */
async function ready(origin: string, child: ChildProcess, output: () => string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`the service exited: ${output().slice(-3000)}`);
    try {
      const res = await fetch(`${origin}/api/v1/status`);
      if (res.ok && ((await res.json()) as { migration?: unknown }).migration === null) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the service did not become ready: ${output().slice(-3000)}`);
}

async function shedCount(origin: string): Promise<number> {
  const text = await (await fetch(`${origin}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith('observer_shed_total{'))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}
