/**
 * One ping budget for every route: a ping caused by an icon, banner or widget request draws on
 * the client's status budget; an answer from the cache stays on the media tier.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { buildApp } from '../../src/http/app.js';
import { createStatusService } from '../../src/status/index.js';
import { testConfig } from '../support/app.js';
import { FakeClock } from '../support/clock.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';

let server: RunningJavaServer;
beforeAll(async () => {
  server = await startJavaServer({ motd: 'budget', onlinePlayers: 1 });
});
afterAll(async () => {
  await server.close();
});

async function appWith(env: Record<string, string>) {
  const config = testConfig(env);
  const app = await buildApp({ config, status: createStatusService({ config, clock: systemClock, icmp: null }), logger: false });
  await app.ready();
  return app;
}

/** 20 distinct names no one has looked up: `*.any.observer.test` resolves to 127.0.0.1. */
const coldNames = (n: number) => {
  const run = randomUUID().slice(0, 8);
  return Array.from({ length: n }, (_, i) => `budget-${run}-${i}.any.observer.test:${server.port}`);
};

const routes = [
  (address: string) => `/api/v1/icon/dynamic?address=${address}`,
  (address: string) => `/api/v1/banner/${address}`,
  (address: string) => `/api/v1/widget/normal/${address}`,
];

describe('ping budget', () => {
  it('with RATE_LIMIT_STATUS=5, 20 image and widget requests for cold names open at most 5 connections', async () => {
    const app = await appWith({ RATE_LIMIT_STATUS: '5', RATE_LIMIT_MEDIA: '1000' });
    try {
      const before = server.connections();
      const names = coldNames(20);
      const responses = await Promise.all(names.map((name, i) => app.inject({ method: 'GET', url: routes[i % 3]!(name) })));
      const opened = server.connections() - before;

      const ok = responses.filter((r) => r.statusCode === 200);
      const limited = responses.filter((r) => r.statusCode === 429);
      expect(ok).toHaveLength(5);
      expect(limited).toHaveLength(15);
      expect(opened).toBeGreaterThan(0);
      expect(opened).toBeLessThanOrEqual(5);
      for (const res of limited) {
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        expect(res.json()).toMatchObject({ status: 'error', error: 'rate_limited' });
        expect(res.headers['retry-after']).toMatch(/^\d+$/);
        // The spent budget is the status tier's, not the media tier the route is on.
        expect(res.headers['ratelimit-policy']).toBe('"status";q=5;w=60');
        expect(res.headers['ratelimit']).toMatch(/^"status";r=0;t=\d+$/);
      }

      // Cached answers stay on the media tier: the servers already pinged are still drawn...
      const pinged = names.filter((_, i) => responses[i]!.statusCode === 200);
      for (const name of pinged) {
        const res = await app.inject({ method: 'GET', url: `/api/v1/icon/sharp?address=${name}` });
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toBe('image/png');
      }
      expect(server.connections() - before).toBe(opened);
      // ...while the status route shares the spent budget.
      const status = await app.inject({ method: 'GET', url: `/api/v1/status/${coldNames(1)[0]}` });
      expect(status.statusCode).toBe(429);
      // Another client has a budget of its own.
      const other = await app.inject({ method: 'GET', url: `/api/v1/banner/${coldNames(1)[0]}`, remoteAddress: '127.0.0.2' });
      expect(other.statusCode).toBe(200);
      expect(server.connections() - before).toBe(opened + 1);
    } finally {
      await app.close();
    }
  });

  it('charges the status route once per request, not again for its ping', async () => {
    const app = await appWith({ RATE_LIMIT_STATUS: '3' });
    try {
      const names = coldNames(4);
      const codes: number[] = [];
      for (const name of names) codes.push((await app.inject({ method: 'GET', url: `/api/v1/status/${name}` })).statusCode);
      expect(codes).toEqual([200, 200, 200, 429]);
    } finally {
      await app.close();
    }
  });

  it('a stale answer\'s background refresh draws on the status budget; with it spent, no ping and still the stale image', async () => {
    // The status service runs on a clock the test moves past the TTL; the rate limits stay on
    // real time, so moving it does not open a new rate-limit window.
    const clock = new FakeClock();
    const config = testConfig({ RATE_LIMIT_STATUS: '3', RATE_LIMIT_MEDIA: '1000' });
    const errors: unknown[] = [];
    const status = createStatusService({ config, clock, icmp: null, onError: (error) => errors.push(error) });
    const app = await buildApp({ config, status, logger: false });
    await app.ready();
    const settled = async () => {
      for (let i = 0; i < 500 && status.activePings > 0; i += 1) await new Promise((r) => setTimeout(r, 10));
      expect(status.activePings).toBe(0);
    };
    try {
      const names = coldNames(4);
      for (const name of names) expect((await status.lookup(name, 'java')).status.online).toBe(true);
      clock.advance(61_000);
      const before = server.connections();

      // Three stale answers, three refreshes: the client's whole status budget.
      for (let i = 0; i < 3; i += 1) {
        const res = await app.inject({ method: 'GET', url: routes[i]!(names[i]!) });
        expect(res.statusCode).toBe(200);
        await settled();
      }
      expect(server.connections() - before).toBe(3);
      const spent = await app.inject({ method: 'GET', url: `/api/v1/status/${coldNames(1)[0]}` });
      expect(spent.statusCode).toBe(429);
      expect(server.connections() - before).toBe(3);

      // Budget spent: stale answers are still served (never a 429), and cause no connection.
      for (const url of routes.map((route) => route(names[3]!))) {
        const res = await app.inject({ method: 'GET', url });
        expect(res.statusCode).toBe(200);
        await settled();
      }
      expect(server.connections() - before).toBe(3);

      // Another client's budget pays for the next refresh of that server.
      const other = await app.inject({ method: 'GET', url: routes[0]!(names[3]!), remoteAddress: '127.0.0.2' });
      expect(other.statusCode).toBe(200);
      await settled();
      expect(server.connections() - before).toBe(4);
      // A refusal is not an error to log.
      expect(errors).toEqual([]);
    } finally {
      await app.close();
    }
  });
});
