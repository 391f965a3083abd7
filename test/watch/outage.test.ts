/**
 * Watches through PostgreSQL outages (a private server stopped with `pg_ctl stop -m
 * immediate`): a delivery due while the database is down goes out when it is back, and a
 * state change that happens during an outage is delivered once it can be recorded. Nothing is
 * lost, nothing is sent twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { testConfig } from '../support/app.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres.js';
import { createJsonWatch } from '../support/watch-api.js';
import { startWebhookReceiver, until, type WebhookReceiver } from '../support/webhook-receiver.js';

const TOKEN = 'observer-00000000000000outage';
let postgres: PrivatePostgres;
let receiver: WebhookReceiver;
let server: RunningJavaServer;
let observer: Awaited<ReturnType<typeof composeApp>>;

beforeAll(async () => {
  postgres = await startPrivatePostgres();
  receiver = await startWebhookReceiver();
  server = await startJavaServer({ motd: `outage ${TOKEN}`, onlinePlayers: 1 });
  const config = testConfig({ DATABASE_URL: postgres.url, STATUS_CACHE_TTL: '1', DAMPING_FAILURES: '2', PING_TIMEOUT_MS: '5000', WATCH_CHECKS_PER_MINUTE: '6000' });
  observer = await composeApp(config, {
    logger: false,
    icmp: null,
    watchTiming: { intervalMs: 100, retryBaseMs: 1_500, recheckMs: 50, tickMs: 25, verificationToken: () => TOKEN },
  });
  await observer.startBackground();
}, 120_000);

afterAll(async () => {
  await observer?.app.close();
  await server?.close();
  await receiver?.close();
  postgres?.remove();
});

describe('watches and database outages', () => {
  it('deliver what was due or changed during an outage once the database is back', async () => {
    const { id, view } = await createJsonWatch(observer.app, `127.0.0.1:${server.port}`, receiver.url());
    expect(await until(async () => (await view()).state === 'online')).toBe(true);

    // The first attempt of `offline` fails; its retry falls due while the database is down.
    receiver.answers.push(500);
    const port = server.port;
    await server.close();
    expect(await until(() => receiver.requests.length === 1)).toBe(true);
    postgres.stop();
    await new Promise((r) => setTimeout(r, 2_500));
    expect(receiver.requests.length).toBe(1);
    postgres.start();
    expect(await until(() => receiver.requests.length === 2)).toBe(true);

    // The server comes back while the database is down: delivered once it can be recorded.
    postgres.stop();
    server = await startJavaServer({ port, motd: `outage ${TOKEN}`, onlinePlayers: 1 });
    await new Promise((r) => setTimeout(r, 1_500));
    expect(receiver.requests.length).toBe(2);
    postgres.start();
    expect(await until(() => receiver.requests.length === 3)).toBe(true);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(receiver.requests.map((r) => [r.headers['webhook-id'], JSON.parse(r.body).event])).toEqual([
      [`${id}_1`, 'offline'],
      [`${id}_1`, 'offline'],
      [`${id}_2`, 'online'],
    ]);
  }, 90_000);
});
