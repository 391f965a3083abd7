/**
 * The per-target-IP ping budget as a client meets it (docs/hostile-clients.md): the whole app as
 * main.ts composes it, over real HTTP (the fast path and the Fastify route), and two instances
 * sharing one Redis. The target is a loopback address of its own (a private dnsmasq points a
 * wildcard name at it), so the budget's Redis key is this test's alone.
 */
import { randomInt } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { testConfig } from '../support/app.js';
import { startPrivateDns, type PrivateDns } from '../support/dns.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { REDIS_URL } from '../support/services.js';

const TARGET_IP = `127.${randomInt(1, 255)}.${randomInt(1, 255)}.${randomInt(1, 255)}`;
let dns: PrivateDns;
let java: RunningJavaServer;
const dirs: string[] = [];
const apps: Array<{ close(): Promise<unknown> }> = [];

beforeAll(async () => {
  dns = await startPrivateDns([`address=/budget.test/${TARGET_IP}`]);
  java = await startJavaServer({ host: TARGET_IP, motd: 'budget' });
});
afterAll(async () => {
  for (const app of apps) await app.close();
  await java.close();
  await dns.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function instance(env: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'observer-budget-'));
  dirs.push(dir);
  const config = testConfig({ DATABASE_URL: `sqlite:${join(dir, 'o.db')}`, DNS_SERVERS: dns.server, LOG_LEVEL: 'silent', ...env });
  const { app } = await composeApp(config, { icmp: null, logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  apps.push(app);
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1/status/`;
  return async (name: string, query = '') => {
    const res = await fetch(`${origin}${name}.budget.test:${java.port}${query}`);
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Record<string, unknown> };
  };
}

describe('TARGET_PINGS_PER_MINUTE over HTTP', () => {
  it('two instances sharing Redis share one budget per target IP; past it, a 429 that says why', async () => {
    const env = { TARGET_PINGS_PER_MINUTE: '1', REDIS_URL };
    const first = await instance(env);
    const second = await instance(env);
    expect((await first('one')).body).toMatchObject({ online: true, ip_address: TARGET_IP });
    for (const answer of [await second('two'), await first('three', '?legacy=false')]) {
      expect(answer.status).toBe(429);
      expect(answer.retryAfter).toMatch(/^\d+$/);
      expect(answer.body).toEqual({ status: 'error', error: 'target_rate_limited', message: expect.stringMatching(/at most once a minute/) });
    }
    const redis = new Redis(REDIS_URL);
    try {
      expect(await redis.keys(`observer:target:*`)).toContain(`observer:target:${TARGET_IP}`);
      // Keys about clients hold their keyed hash, never their address (127.0.0.1 here).
      const clientKeys = [...(await redis.keys('observer:new-servers:*')), ...(await redis.keys('observer:rl:*'))];
      expect(clientKeys.length).toBeGreaterThan(0);
      expect(clientKeys.filter((key) => key.includes('127.0.0.1'))).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });
});
