/**
 * deploy/nginx.conf in front of two Observer processes sharing an own Redis: the client
 * address reaches the instances (X-Forwarded-For, TRUST_PROXY), rate limits hold through the
 * proxy, and connections are kept alive on both sides. Loopback only.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInstance, type Instance } from '../support/instances.js';
import { startNginx, type RunningNginx } from '../support/nginx.js';
import { startOwnRedis, type OwnRedis } from '../support/redis-process.js';
import { DNS_SERVER } from '../support/services.js';
import { freePort } from '../../scripts/ports.mjs';

// Under 4 every hit is counted in Redis at once (a quarter of the limit is under one hit), so
// the limit is exact; the batched counting of larger limits is tested in test/redis.
const LIMIT = 3;
let dir: string;
let redis: OwnRedis;
let instances: Instance[] = [];
let nginx: RunningNginx;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'observer-nginx-test-'));
  redis = await startOwnRedis();
  for (const name of ['a', 'b']) {
    instances.push(
      await startInstance({
        DATABASE_URL: `sqlite:${join(dir, `${name}.db`)}`,
        REDIS_URL: redis.url,
        DNS_SERVERS: DNS_SERVER,
        // Only nginx (on loopback) has its X-Forwarded-For believed.
        TRUST_PROXY: '127.0.0.1/32',
        RATE_LIMIT_GENERAL: String(LIMIT),
      }),
    );
  }
  nginx = await startNginx(instances.map((i) => i.port));
}, 120_000);

afterAll(async () => {
  await nginx?.stop();
  await Promise.all(instances.map((i) => i.stop()));
  instances = [];
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

/** GET through nginx from a given loopback source address, with optional extra headers. */
function get(path: string, from = '127.0.0.1', headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${nginx.url}${path}`, { localAddress: from, headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
}

describe('nginx in front of two instances', () => {
  it('passes the client address: a forged X-Forwarded-For does not buy a new budget, another client has its own', async () => {
    const codes = [];
    for (let i = 0; i < LIMIT + 2; i += 1) {
      codes.push(await get('/api/v1/openapi.json', '127.0.0.1', { 'x-forwarded-for': `198.51.100.${i + 1}` }));
    }
    expect(codes).toEqual([...Array(LIMIT).fill(200), 429, 429]);
    // A client at another address (127.0.0.2) is counted on its own.
    expect(await get('/api/v1/openapi.json', '127.0.0.2')).toBe(200);
  });

  it('enforces one limit across both instances', async () => {
    const from = '127.0.0.3';
    const codes = [];
    for (let i = 0; i < LIMIT + 1; i += 1) codes.push(await get('/api/v1/openapi.json', from));
    expect(codes).toEqual([...Array(LIMIT).fill(200), 429]);
  });

  it('keeps connections alive to the client and to the instances', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const reused: boolean[] = [];
    try {
      for (let i = 0; i < 10; i += 1) {
        await new Promise<void>((resolve, reject) => {
          const req = http.get(`${nginx.url}/api/v1/status`, { agent }, (res) => {
            res.resume();
            res.on('end', () => {
              reused.push(req.reusedSocket);
              expect(res.headers.connection).not.toBe('close');
              resolve();
            });
          });
          req.on('error', reject);
        });
      }
    } finally {
      agent.destroy();
    }
    expect(reused.slice(1).every(Boolean)).toBe(true);
    // nginx keeps idle upstream connections open (without `keepalive` it closes each one).
    const ports = instances.map((i) => `dport = :${i.port}`).join(' or ');
    const established = execFileSync('ss', ['-Htnp', 'state', 'established', `( ${ports} )`], { encoding: 'utf8' })
      .split('\n')
      .filter((line) => line.includes('"nginx"'));
    expect(established.length).toBeGreaterThan(0);
    expect(established.length).toBeLessThanOrEqual(10);
  });
});

/**
 * An instance's listener as nginx sees it during a rolling restart, switched off and on at once:
 * a TCP forwarder on a port of its own, in front of a real instance. Off, it refuses new
 * connections and drops open ones (the instance stopping or stopped); on, it accepts again
 * (the instance started again).
 */
async function switchableListener(target: number): Promise<{ port: number; off(): Promise<void>; on(): Promise<void> }> {
  const port = await freePort();
  const sockets = new Set<net.Socket>();
  let server: net.Server | null = null;
  const on = () =>
    new Promise<void>((resolve) => {
      server = net.createServer((client) => {
        const upstream = net.connect(target, '127.0.0.1');
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => s.destroy());
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(port, '127.0.0.1', resolve);
    });
  const off = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      if (server === null) return resolve();
      server.close(() => resolve());
      server = null;
    });
  await on();
  return { port, on, off };
}

describe('nginx during a rolling restart', () => {
  it('answers from the instance started last even while it still leaves it out, rather than 502', async () => {
    const [a, b] = await Promise.all(instances.map((i) => switchableListener(i.port)));
    const proxy = await startNginx([a!.port, b!.port]);
    const statuses = async (n: number) => {
      const codes: number[] = [];
      for (let i = 0; i < n; i += 1) codes.push((await fetch(`${proxy.url}/api/v1/status`)).status);
      return codes;
    };
    try {
      expect(await statuses(4)).toEqual([200, 200, 200, 200]);
      // The first instance stops: nginx fails on it (3 times within 5 s) and leaves it out for 5 s.
      await a!.off();
      expect(await statuses(12)).toEqual(Array(12).fill(200));
      // Started again, and the second one stopped at once, well within those 5 s.
      await a!.on();
      await b!.off();
      expect(await statuses(12)).toEqual(Array(12).fill(200));
    } finally {
      await proxy.stop();
      await Promise.all([a!.off(), b!.off()]);
    }
  });
});
