/**
 * Distinct clients for the trends are counted by IPv6 /48 (docs/hostile-clients.md, "Trends and
 * IPv6"): 65,536 /64s of one /48 are one client, whichever entrance (the fast path, a Fastify
 * route, an image) they came by. The whole app as main.ts composes it, clients told apart by
 * X-Forwarded-For from a trusted loopback proxy.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { testConfig } from '../support/app.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';

let java: RunningJavaServer;
let dir: string;
beforeAll(async () => {
  java = await startJavaServer({ motd: 'trending' });
  dir = mkdtempSync(join(tmpdir(), 'observer-trend-clients-'));
});
afterAll(async () => {
  await java.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('distinct clients of /trends', () => {
  it('counts one IPv6 /48 once, however many /64s it asks from; another /48 counts again', async () => {
    const { app, store, status } = await composeApp(testConfig({ DATABASE_URL: `sqlite:${join(dir, 'o.db')}`, TRUST_PROXY: 'true' }), {
      logger: false,
      icmp: null,
    });
    try {
      await app.listen({ host: '127.0.0.1', port: 0 });
      const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
      const target = `127.0.0.1:${java.port}`;
      const from = (ip: string, path: string) => fetch(`${origin}${path}`, { headers: { 'x-forwarded-for': ip } });
      const sameSlash48 = ['2001:db8:aa:1::1', '2001:db8:aa:2::1', '2001:db8:aa:ffff::1'];
      // The fast path, the Fastify route and an image, each from another /64 of the /48.
      expect((await from(sameSlash48[0]!, `/api/v1/status/${target}`)).status).toBe(200);
      expect((await from(sameSlash48[1]!, `/api/v1/status/${target}?legacy=false`)).status).toBe(200);
      expect((await from(sameSlash48[2]!, `/api/v1/icon/dynamic?address=${target}`)).status).toBe(200);
      await status.recorded();
      await store.flush();
      const score = async () => ((await (await fetch(`${origin}/api/v1/trends`)).json()) as { data: Array<{ trend_score: number }> }).data[0]?.trend_score;
      expect(await score()).toBe(1);
      expect((await from('2001:db8:bb:1::1', `/api/v1/status/${target}`)).status).toBe(200);
      await status.recorded();
      await store.flush();
      expect(await score()).toBe(2);
    } finally {
      await app.close();
    }
  });
});
