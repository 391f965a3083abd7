/**
 * Two Observer apps over one PostgreSQL database, both running the check and delivery loops:
 * each event is delivered once, whichever instance saw it first, also when the receiver is
 * slow and many events are due at once (each attempt is leased just before it is sent, under
 * a fencing token). Every delivery verifies with the `standardwebhooks` package.
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { testConfig } from '../support/app.js';
import { uniqueDatabase } from '../support/instances.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { POSTGRES_URL } from '../support/services.js';
import { createJsonWatch, type CreatedWatch } from '../support/watch-api.js';
import { startWebhookReceiver, until, type ReceivedRequest, type WebhookReceiver } from '../support/webhook-receiver.js';

type Composed = Awaited<ReturnType<typeof composeApp>>;
const TOKEN = 'observer-0000000000000cluster';

let database: { url: string; drop: () => Promise<void> };
let server: RunningJavaServer;
const instances: Composed[] = [];
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  database = await uniqueDatabase(POSTGRES_URL);
  server = await startJavaServer({ motd: `cluster ${TOKEN}`, onlinePlayers: 2 });
  const config = testConfig({
    DATABASE_URL: database.url,
    STATUS_CACHE_TTL: '1',
    DAMPING_FAILURES: '2',
    PING_TIMEOUT_MS: '5000',
    WATCH_CHECKS_PER_MINUTE: '6000',
    WATCH_DELIVERY_TIMEOUT_MS: '2000',
    WATCHES_UNVERIFIED_PER_CLIENT: '20',
    WATCHES_PER_CLIENT: '20',
    WATCHES_PER_SERVER: '20',
    WATCH_SECRET: 'cluster-secret-cluster-secret-cluster-secret',
  });
  // One at a time: the first runs the migrations.
  for (let i = 0; i < 2; i += 1) {
    const composed = await composeApp(config, {
      logger: false,
      icmp: null,
      watchTiming: { intervalMs: 100, retryBaseMs: 100, recheckMs: 50, tickMs: 20, deliveryTickMs: 20, verificationToken: () => TOKEN },
    });
    await composed.startBackground();
    instances.push(composed);
  }
}, 60_000);

afterAll(async () => {
  for (const composed of instances) await composed.app.close();
  await server?.close();
  for (const receiver of receivers) await receiver.close();
  await database?.drop();
});

async function receiver(options: { delayMs?: number } = {}): Promise<WebhookReceiver> {
  const started = await startWebhookReceiver(options);
  receivers.push(started);
  return started;
}

/** Stops the Minecraft server until `offline` hooks arrived, then starts it again. */
async function bounceServer(arrived: () => boolean): Promise<void> {
  const port = server.port;
  await server.close();
  expect(await until(arrived, 30_000)).toBe(true);
  server = await startJavaServer({ port, motd: `cluster ${TOKEN}`, onlinePlayers: 2 });
}

const received = (requests: ReceivedRequest[]) => requests.map((r) => [r.headers['webhook-id'], JSON.parse(r.body).event]);

describe('two instances over one PostgreSQL', () => {
  it('deliver each event once', async () => {
    const [a, b] = instances as [Composed, Composed];
    const hooks = await receiver();
    const { id, secret, view } = await createJsonWatch(a.app, `127.0.0.1:${server.port}`, hooks.url());
    expect(await until(async () => (await view(b.app)).state === 'online')).toBe(true);
    await bounceServer(() => hooks.requests.length >= 1);
    expect(await until(() => hooks.requests.length >= 2)).toBe(true);
    // Both loops keep checking: no second copy of either event arrives.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(received(hooks.requests)).toEqual([
      [`${id}_1`, 'offline'],
      [`${id}_2`, 'online'],
    ]);
    // The signing secret derives from WATCH_SECRET: both instances sign alike.
    for (const hook of hooks.requests) expect(() => new Webhook(secret).verify(hook.body, hook.headers as Record<string, string>)).not.toThrow();
    expect((await view(a.app)).deliveries).toHaveLength(2);
  });

  it('deliver each of many events once while the receiver takes a second and a half to answer', { timeout: 90_000 }, async () => {
    const [a, b] = instances as [Composed, Composed];
    const slow = await receiver({ delayMs: 1_500 });
    const watches: CreatedWatch[] = [];
    for (let i = 0; i < 12; i += 1) watches.push(await createJsonWatch(i % 2 ? b.app : a.app, `127.0.0.1:${server.port}`, slow.url(`/hook/${i}`)));
    expect(await until(async () => (await Promise.all(watches.map((w) => w.view(a.app)))).every((v) => v.state === 'online'), 30_000)).toBe(true);
    await bounceServer(() => slow.requests.length >= watches.length);
    expect(await until(() => slow.requests.length >= 2 * watches.length, 60_000)).toBe(true);
    // Longer than a lease (DNS deadline, the 2 s delivery timeout and its margin): a late copy would be here.
    await new Promise((r) => setTimeout(r, 18_000));
    const expected = watches.flatMap((w) => [
      [`${w.id}_1`, 'offline'],
      [`${w.id}_2`, 'online'],
    ]);
    const ids = received(slow.requests);
    expect(ids).toHaveLength(expected.length);
    expect([...ids].sort()).toEqual([...expected].sort());
    for (const [i, w] of watches.entries()) {
      const ofWatch = slow.requests.filter((r) => String(r.headers['webhook-id']).startsWith(`${w.id}_`));
      expect(ofWatch.map((r) => r.path)).toEqual([`/hook/${i}`, `/hook/${i}`]);
      for (const hook of ofWatch) expect(() => new Webhook(w.secret).verify(hook.body, hook.headers as Record<string, string>)).not.toThrow();
    }
  });
});
