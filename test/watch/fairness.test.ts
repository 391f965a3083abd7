/**
 * Fair checks, measured from outside: one client holds hundreds of verified watches whose
 * look-ups stay undecided (many names on one IP whose per-target budget is spent, so each of
 * them is rechecked), another client holds three. Through the API only (creation, /verify,
 * GET), the three keep their interval while the loop hands the rest of the budget to the
 * hundreds. Driven tick by tick on a fake clock, against real Minecraft servers, real DNS
 * (the test zone's wildcard) and a real SQLite store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { testConfig } from '../support/app.js';
import { FakeClock } from '../support/clock.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const TOKEN = 'observer-0000000000000fair1';
const MINUTE = 60_000;
const INTERVAL = 5 * MINUTE;
const TICK = 5_000;
const HOSTILE = 250;

const dir = mkdtempSync(join(tmpdir(), 'observer-watch-fair-'));
let hostileServer: RunningJavaServer;
let victimServer: RunningJavaServer;
let receiver: WebhookReceiver;
beforeAll(async () => {
  hostileServer = await startJavaServer({ motd: `mine ${TOKEN}` });
  // Another loopback address: its own per-target budget.
  victimServer = await startJavaServer({ host: '127.0.0.2', motd: `ours ${TOKEN}` });
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await hostileServer?.close();
  await victimServer?.close();
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Created {
  id: string;
  management_token: string;
}

it('keeps a few watches on their interval beside hundreds from another client', { timeout: 300_000 }, async () => {
  const clock = new FakeClock();
  const o = await composeApp(
    testConfig({
      DATABASE_URL: `sqlite:${join(dir, 'fair.db')}`,
      WATCH_CHECKS_PER_MINUTE: '60',
      WATCH_INTERVAL_MINUTES: '5',
      WATCHES_PER_CLIENT: '1000',
      WATCHES_UNVERIFIED_PER_CLIENT: '1000',
      STATUS_CACHE_TTL: '60',
      PING_TIMEOUT_MS: '3000',
      TARGET_PINGS_PER_MINUTE: '30',
      RATE_LIMIT_GENERAL: '100000',
      NEW_SERVERS_PER_CLIENT_PER_DAY: '100000',
    }),
    { logger: false, icmp: null, clock, watchTiming: { intervalMs: INTERVAL, verificationToken: () => TOKEN } },
  );
  try {
    const api = (method: 'GET' | 'POST', url: string, remoteAddress: string, token?: string, payload?: object) =>
      o.app.inject({ method, url: `/api/v1${url}`, remoteAddress, ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}), ...(payload ? { payload } : {}) });
    const create = async (address: string, client: string) => {
      const res = await api('POST', '/watches', client, undefined, { address, edition: 'java', webhook: { kind: 'json', url: receiver.url() } });
      expect(res.statusCode).toBe(201);
      return res.json() as Created;
    };
    const verify = async (watch: Created, client: string) => (await api('POST', `/watches/${watch.id}/verify`, client, watch.management_token)).json();

    // The many: one name each, all on 127.0.0.1, verified 25 a minute (the target budget is 30).
    const many: Created[] = [];
    for (let i = 0; i < HOSTILE; i += 1) many.push(await create(`h${i}.any.observer.test:${hostileServer.port}`, '127.0.0.10'));
    for (const [i, watch] of many.entries()) {
      if (i > 0 && i % 25 === 0) clock.advance(MINUTE + 1_000);
      expect((await verify(watch, '127.0.0.10')).verification.verified).toBe(true);
    }
    // The few, created last: due after all of the many.
    const few: Created[] = [];
    for (let i = 0; i < 3; i += 1) few.push(await create(`127.0.0.2:${victimServer.port}`, '127.0.0.20'));
    for (const watch of few) expect((await verify(watch, '127.0.0.20')).verification.verified).toBe(true);

    const checkedAt = new Map<string, number[]>(few.map((w) => [w.id, []]));
    const start = clock.now();
    await o.watchScheduler.tick();
    while (clock.now() < start + 3 * INTERVAL + 2 * TICK) {
      clock.advance(TICK);
      await o.watchScheduler.tick();
      for (const watch of few) {
        const seen = (await api('GET', `/watches/${watch.id}`, '127.0.0.20', watch.management_token)).json().last_checked_at as string | null;
        const times = checkedAt.get(watch.id)!;
        if (seen !== null && Date.parse(seen) !== times.at(-1)) times.push(Date.parse(seen));
      }
    }

    for (const [id, times] of checkedAt) {
      // Checked at each interval: after the first (due INTERVAL after creation), every INTERVAL.
      expect(times.length, id).toBeGreaterThanOrEqual(3);
      expect(times[0]! - start, id).toBeLessThanOrEqual(INTERVAL + 2 * TICK);
      for (let i = 1; i < times.length; i += 1) expect(times[i]! - times[i - 1]!, id).toBeLessThanOrEqual(INTERVAL + 2 * TICK);
    }
    // The many wanted more than the budget (their look-ups stay undecided while the target's
    // pings are spent, and are rechecked): some of them waited past their interval, on what
    // the few left.
    const views = await Promise.all(many.map(async (w) => (await api('GET', `/watches/${w.id}`, '127.0.0.10', w.management_token)).json()));
    const late = views.filter((v) => v.last_checked_at === null || Date.parse(v.last_checked_at) < clock.now() - INTERVAL - 2 * TICK);
    expect(late.length).toBeGreaterThan(0);
  } finally {
    await o.app.close();
  }
});
