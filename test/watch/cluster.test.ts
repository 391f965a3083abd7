/**
 * Two Observer apps over one PostgreSQL database, both running the watch loop against one
 * watch: each state change is delivered once, whichever instance saw it first.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { testConfig } from '../support/app.js';
import { uniqueDatabase } from '../support/instances.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { POSTGRES_URL } from '../support/services.js';
import { createJsonWatch } from '../support/watch-api.js';
import { startWebhookReceiver, until, type WebhookReceiver } from '../support/webhook-receiver.js';

type Composed = Awaited<ReturnType<typeof composeApp>>;
const TOKEN = 'observer-0000000000000cluster';

let database: { url: string; drop: () => Promise<void> };
let receiver: WebhookReceiver;
let server: RunningJavaServer;
const instances: Composed[] = [];

beforeAll(async () => {
  database = await uniqueDatabase(POSTGRES_URL);
  receiver = await startWebhookReceiver();
  server = await startJavaServer({ motd: `cluster ${TOKEN}`, onlinePlayers: 2 });
  const config = testConfig({
    DATABASE_URL: database.url,
    STATUS_CACHE_TTL: '1',
    DAMPING_FAILURES: '2',
    PING_TIMEOUT_MS: '5000',
    WATCH_PINGS_PER_MINUTE: '6000',
    WATCH_SECRET: 'cluster-secret-cluster-secret-cluster-secret',
  });
  // One at a time: the first runs the migrations.
  for (let i = 0; i < 2; i += 1) {
    const composed = await composeApp(config, {
      logger: false,
      icmp: null,
      watchTiming: { intervalMs: 100, retryBaseMs: 100, recheckMs: 50, tickMs: 20, verificationToken: () => TOKEN },
    });
    await composed.startBackground();
    instances.push(composed);
  }
}, 60_000);

afterAll(async () => {
  for (const composed of instances) await composed.app.close();
  await server?.close();
  await receiver?.close();
  await database?.drop();
});

describe('two instances over one PostgreSQL', () => {
  it('deliver each event once', async () => {
    const [a, b] = instances as [Composed, Composed];
    const { id, view } = await createJsonWatch(a.app, `127.0.0.1:${server.port}`, receiver.url());
    expect(await until(async () => (await view(b.app)).state === 'online')).toBe(true);
    const port = server.port;
    await server.close();
    expect(await until(() => receiver.requests.length >= 1)).toBe(true);
    await new Promise((r) => setTimeout(r, 1_000));
    server = await startJavaServer({ port, motd: `cluster ${TOKEN}`, onlinePlayers: 2 });
    expect(await until(() => receiver.requests.length >= 2)).toBe(true);
    // Both loops keep checking: no second copy of either event arrives.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(receiver.requests.map((r) => [r.headers['x-observer-delivery'], JSON.parse(r.body).event])).toEqual([
      [`${id}:1`, 'offline'],
      [`${id}:2`, 'online'],
    ]);
    // The signing secret derives from WATCH_SECRET: both instances sign alike.
    expect(new Set(receiver.requests.map((r) => r.headers['x-observer-signature'])).size).toBe(2);
    expect((await view(a.app)).deliveries).toHaveLength(2);
  });
});
