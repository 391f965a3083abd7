/**
 * deploy/nginx.conf in front of two Observer processes sharing an own Redis: the client
 * address reaches the instances (X-Forwarded-For, TRUST_PROXY), rate limits hold through the
 * proxy, and connections are kept alive on both sides. Loopback only.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInstance, type Instance } from '../support/instances.js';
import { startNginx, type RunningNginx } from '../support/nginx.js';
import { startOwnRedis, type OwnRedis } from '../support/redis-process.js';
import { DNS_SERVER } from '../support/services.js';

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
