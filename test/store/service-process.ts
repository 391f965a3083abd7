/**
 * The real service as an operator runs it (`node dist/main.js`, what `npm start` starts; the
 * test setup builds dist), on a database of its own, for the upgrade tests: started, its JSON
 * log read line by line, polled until its migrations are done, stopped, and what it answers
 * about an upgrade fixture's history.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { isDeepStrictEqual } from 'node:util';
import { expect } from 'vitest';
import { freePort } from '../../scripts/ports.mjs';
import { fixtureAddress } from './upgrade-fixture.js';
import type { LegacyDatabase } from './legacy-layout.js';

export interface Service {
  child: ChildProcess;
  port: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output: () => string;
  /** What it wrote to stderr (the log goes to stdout). */
  stderr: () => string;
  /** The log lines so far, parsed. */
  log: Array<Record<string, unknown>>;
}

/** Every process started, so that a failed test leaves none behind. */
export const children: ChildProcess[] = [];
/**
 * Ports handed to services: never one twice, so that a request never goes out on a kept-alive
 * connection to an earlier service that listened there.
 */
const portsUsed = new Set<number>();

export function databaseUrl(database: LegacyDatabase): string {
  return database.kind === 'sqlite' ? `sqlite:${database.path}` : database.url;
}

async function portForService(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (!portsUsed.has(port)) {
      portsUsed.add(port);
      return port;
    }
  }
}

/** Called with each log line of a service as it comes (before `startService` has resolved, too). */
export type LineHandler = (entry: Record<string, unknown>, service: Service) => void;

export interface ServiceOptions {
  /** Variables added to the service's environment. */
  env?: Record<string, string>;
}

/**
 * The service on `database`, every log line handed to `onLine` as it comes; resolves once it
 * listens (it migrates after that) or has exited. A port that another process took between
 * its choice and the service's listen is not the service's failure: it starts again on
 * another (it listens before touching the schema).
 */
export async function startService(database: LegacyDatabase, onLine: LineHandler = () => {}, options: ServiceOptions = {}): Promise<Service> {
  for (let attempt = 1; ; attempt++) {
    let listening = () => {};
    const listened = new Promise<void>((resolve) => (listening = resolve));
    const service = await spawnService(database, options, (entry, self) => {
      if (String(entry.msg).startsWith('Server listening')) listening();
      onLine(entry, self);
    });
    await Promise.race([listened, service.exited]);
    if (attempt === 5 || alive(service) || !service.output().includes('EADDRINUSE')) return service;
  }
}

async function spawnService(database: LegacyDatabase, options: ServiceOptions, onLine: LineHandler): Promise<Service> {
  const port = await portForService();
  const child = spawn(process.execPath, ['dist/main.js'], {
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: databaseUrl(database),
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'debug',
      ICMP: 'off',
      REFRESH_PINGS_PER_MINUTE: '0',
      // The tests ask one service for its answers many times a minute.
      RATE_LIMIT_GENERAL: '10000000',
      RATE_LIMIT_STATUS: '10000000',
      // Look-ups of loopback ports nothing listens on: answered offline at once, each a new server.
      TARGET_ALLOWLIST: '127.0.0.0/8,::1/128',
      NEW_SERVERS_PER_CLIENT_PER_DAY: '1000000',
      TARGET_PINGS_PER_MINUTE: '100000',
      PING_TIMEOUT_MS: '2000',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  let stderr = '';
  let pending = '';
  const log: Array<Record<string, unknown>> = [];
  child.stdout!.on('data', (d: Buffer) => {
    output += d.toString();
    pending += d.toString();
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        continue; // not a log line
      }
      log.push(entry);
      onLine(entry, service);
    }
  });
  child.stderr!.on('data', (d: Buffer) => {
    output += d.toString();
    stderr += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const service: Service = { child, port, exited, output: () => output, stderr: () => stderr, log };
  return service;
}

export const alive = (service: Service) => service.child.exitCode === null && service.child.signalCode === null;

/** Polls health until it says no migration runs; false if the process ended first. */
export async function migrated(service: Service): Promise<boolean> {
  for (let i = 0; i < 3000 && alive(service); i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${service.port}/api/v1/status`);
      if (res.ok && ((await res.json()) as { migration?: unknown }).migration === null) return true;
    } catch {
      // not listening yet, or killed
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  if (alive(service)) throw new Error(`the migration did not end: ${service.output()}`);
  return false;
}

/** Stops the service with SIGTERM; it must exit 0. */
export async function stop(service: Service): Promise<void> {
  expect(alive(service), service.output().slice(-3000)).toBe(true);
  service.child.kill('SIGTERM');
  expect(await service.exited, service.output().slice(-3000)).toEqual({ code: 0, signal: null });
}

/** Ends the service however it can, after a failure. */
export async function end(service: Service): Promise<void> {
  if (!alive(service)) return;
  service.child.kill('SIGKILL');
  await service.exited;
}

/**
 * What the service answers about a fixture's servers `compared`; the request counters left out
 * (they count these requests). A read the database did not answer within its second (503
 * `store_unavailable`, on a machine the suite keeps busy) is asked again after its
 * `Retry-After`, as a client would, twice at most.
 */
export async function answers(service: Service, compared: readonly number[]): Promise<unknown> {
  const get = async (path: string): Promise<Record<string, unknown>> => {
    for (let attempt = 1; ; attempt++) {
      const res = await fetch(`http://127.0.0.1:${service.port}/api/v1${path}`);
      const body: Record<string, unknown> = { status: res.status, ...((await res.json()) as Record<string, unknown>) };
      if (attempt === 3 || body.error !== 'store_unavailable') return body;
      await new Promise((resolve) => setTimeout(resolve, Number(res.headers.get('retry-after') ?? 5) * 1000));
    }
  };
  const histories = [];
  for (const i of compared) for (const range of ['24h', '7d', '30d']) histories.push(await get(`/history/${fixtureAddress(i)}?range=${range}`));
  const { totalRequests: _t, apiRequests: _a, serverQueries: _s, ...stats } = (await get('/stats')) as Record<string, unknown>;
  return { histories, trends: await get('/trends?limit=50'), stats };
}

/**
 * A service's answers and the uninterrupted one's, read beside each other: the ranges end at
 * the moment of the request, so a pair read across a bucket's boundary is read again.
 */
export async function answersBeside(service: Service, unbroken: Service, compared: readonly number[]): Promise<{ got: unknown; reference: unknown }> {
  for (let attempt = 1; ; attempt++) {
    const before = await answers(unbroken, compared);
    const got = await answers(service, compared);
    const after = await answers(unbroken, compared);
    if (attempt === 3 || isDeepStrictEqual(before, after)) return { got, reference: after };
  }
}
