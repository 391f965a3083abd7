/**
 * Watches end to end on SQLite: a real minecraft-protocol server that stops and starts again,
 * a webhook receiver on loopback, verification by MOTD and by a TXT record (dnsmasq), the
 * guard on webhook URLs, management with the bearer token, retries and the delivery log.
 */
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { testConfig } from '../support/app.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { startWebhookReceiver, until, type WebhookReceiver } from '../support/webhook-receiver.js';
import { discordValidator } from './discord-schema.js';

type Composed = Awaited<ReturnType<typeof composeApp>>;

const ENV = { STATUS_CACHE_TTL: '1', DAMPING_FAILURES: '1', PING_TIMEOUT_MS: '5000', RATE_LIMIT_GENERAL: '1000', WATCH_PINGS_PER_MINUTE: '6000' };
const TIMING = { intervalMs: 150, retryBaseMs: 100, recheckMs: 100, tickMs: 50 };
/** The token the TXT record of watch.observer.test holds (test/fixtures/dnsmasq.conf). */
const DNS_TOKEN = 'observer-00000000000000dns1';

let dir: string;
let receiver: WebhookReceiver;
const opened: Composed[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'observer-watches-'));
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  for (const composed of opened) await composed.app.close();
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function observer(env: Record<string, string> = {}, verificationToken?: () => string): Promise<Composed> {
  const composed = await composeApp(testConfig({ DATABASE_URL: `sqlite:${join(dir, `w${opened.length}.db`)}`, ...ENV, ...env }), {
    logger: false,
    icmp: null,
    watchTiming: { ...TIMING, ...(verificationToken ? { verificationToken } : {}) },
  });
  opened.push(composed);
  return composed;
}

interface Created {
  id: string;
  management_token: string;
  signing_secret?: string;
  watch: { verification: { token: string; verified: boolean; txt_name: string | null; txt_value: string | null } };
}

async function create(o: Composed, body: Record<string, unknown>) {
  return o.app.inject({ method: 'POST', url: '/api/v1/watches', payload: body });
}

const auth = (token: string) => ({ authorization: `Bearer ${token}` });

function hooksFor(id: string) {
  return receiver.requests.filter((r) => String(r.headers['x-observer-delivery'] ?? '').startsWith(`${id}:`));
}

describe('webhook targets', () => {
  it('refuses loopback spellings with the allowlist off, and sends nothing', async () => {
    const o = await observer({ TARGET_ALLOWLIST: '' });
    const before = receiver.requests.length;
    for (const url of [`http://127.0.0.1:${receiver.port}/hook`, `http://[::1]:${receiver.port}/hook`, `http://localhost:${receiver.port}/hook`, `http://127.1:${receiver.port}/`]) {
      const res = await create(o, { address: 'mc.observer.test', edition: 'java', webhook: { kind: 'json', url } });
      expect(res.statusCode, url).toBe(400);
      expect(res.json(), url).toMatchObject({ status: 'error', error: 'webhook_refused' });
    }
    const bad = await create(o, { address: 'mc.observer.test', edition: 'java', webhook: { kind: 'json', url: 'ftp://example.net/' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toBe('invalid_webhook');
    const missing = await create(o, { address: 'mc.observer.test', edition: 'java', webhook: { kind: 'json', url: 'http://missing.observer.test/hook' } });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toBe('webhook_not_found');
    expect(receiver.requests.length).toBe(before);
  });
});

describe('a watch from creation to deliveries', () => {
  let server: RunningJavaServer;
  let o: Composed;
  let created: Created;

  beforeAll(async () => {
    server = await startJavaServer({ motd: 'A watched server', onlinePlayers: 3, maxPlayers: 20 });
    o = await observer();
    await o.startBackground();
  });
  afterAll(async () => server?.close());

  it('answers the management token once and only a hash of it is needed afterwards', async () => {
    const res = await create(o, { address: `127.0.0.1:${server.port}`, edition: 'java', webhook: { kind: 'json', url: receiver.url() } });
    expect(res.statusCode).toBe(201);
    created = res.json();
    expect(created.management_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(created.signing_secret).toMatch(/^[0-9a-f]{64}$/);
    expect(created.watch.verification).toMatchObject({ verified: false, txt_name: null, txt_value: null });
    expect(JSON.stringify((await o.app.inject({ method: 'GET', url: `/api/v1/watches/${created.id}`, headers: auth(created.management_token) })).json())).not.toContain(
      created.management_token,
    );
  });

  it('answers 401 without or with a wrong token, 404 for an unknown id', async () => {
    const none = await o.app.inject({ method: 'GET', url: `/api/v1/watches/${created.id}` });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toMatchObject({ status: 'error', error: 'unauthorized' });
    const wrong = await o.app.inject({ method: 'GET', url: `/api/v1/watches/${created.id}`, headers: auth('x'.repeat(43)) });
    expect(wrong.statusCode).toBe(401);
    const unknown = await o.app.inject({ method: 'DELETE', url: '/api/v1/watches/00000000-0000-4000-8000-000000000000', headers: auth(created.management_token) });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error).toBe('watch_not_found');
  });

  it('sends nothing before verification, even when the server goes down and up', async () => {
    const test = await o.app.inject({ method: 'POST', url: `/api/v1/watches/${created.id}/test`, headers: auth(created.management_token) });
    expect(test.statusCode).toBe(409);
    expect(test.json().error).toBe('not_verified');
    await server.close();
    await new Promise((r) => setTimeout(r, 1_500));
    server = await startJavaServer({ port: server.port, motd: 'A watched server', onlinePlayers: 3, maxPlayers: 20 });
    await new Promise((r) => setTimeout(r, 1_500));
    expect(hooksFor(created.id)).toEqual([]);
    const view = (await o.app.inject({ method: 'GET', url: `/api/v1/watches/${created.id}`, headers: auth(created.management_token) })).json();
    expect(view.verification.verified).toBe(false);
  });

  it('is verified by the token in the MOTD', async () => {
    server.setMotd(`A watched server ${created.watch.verification.token}`);
    const verified = await until(async () => {
      const res = await o.app.inject({ method: 'POST', url: `/api/v1/watches/${created.id}/verify`, headers: auth(created.management_token) });
      return res.json().verification.verified === true;
    });
    expect(verified).toBe(true);
    const view = (await o.app.inject({ method: 'GET', url: `/api/v1/watches/${created.id}`, headers: auth(created.management_token) })).json();
    expect(view.verification).toMatchObject({ verified: true, method: 'motd', expires_at: null });
  });

  it('delivers exactly one signed event when the server stops and one when it starts again', async () => {
    const get = async () => (await o.app.inject({ method: 'GET', url: `/api/v1/watches/${created.id}`, headers: auth(created.management_token) })).json();
    expect(await until(async () => (await get()).state === 'online')).toBe(true);
    expect(hooksFor(created.id)).toEqual([]);
    await server.close();
    expect(await until(() => hooksFor(created.id).length >= 1)).toBe(true);
    // Several more checks find it offline: still one delivery.
    await new Promise((r) => setTimeout(r, 1_000));
    server = await startJavaServer({ port: server.port, motd: 'Back again', onlinePlayers: 5, maxPlayers: 20 });
    expect(await until(() => hooksFor(created.id).length >= 2)).toBe(true);
    await new Promise((r) => setTimeout(r, 1_000));
    const hooks = hooksFor(created.id);
    expect(hooks.map((h) => JSON.parse(h.body).event)).toEqual(['offline', 'online']);
    for (const hook of hooks) {
      // How a receiver checks a delivery (docs/api.md): HMAC-SHA256 of the raw body under the signing secret.
      const expected = `sha256=${createHmac('sha256', created.signing_secret!).update(hook.body).digest('hex')}`;
      expect(hook.headers['x-observer-signature']).toBe(expected);
      expect(hook.headers['content-type']).toBe('application/json');
    }
    const [down, up] = hooks.map((h) => JSON.parse(h.body));
    expect(down).toMatchObject({ watch_id: created.id, sequence: 1, address: `127.0.0.1:${server.port}`, edition: 'java', server: { online: false } });
    expect(up).toMatchObject({ sequence: 2, server: { online: true, players_online: 5, players_max: 20, motd: 'Back again' } });
    expect(up.url).toMatch(new RegExp(`/server/127\\.0\\.0\\.1%3A${server.port}$`));
    const view = await get();
    expect(view.deliveries.map((d: { event: string; status_code: number }) => [d.event, d.status_code])).toEqual([
      ['online', 204],
      ['offline', 204],
    ]);
  });

  it('sends a test delivery once verified, and ends the watch on DELETE', async () => {
    const test = await o.app.inject({ method: 'POST', url: `/api/v1/watches/${created.id}/test`, headers: auth(created.management_token) });
    expect(test.json()).toEqual({ delivered: true, status_code: 204, error: null });
    expect(JSON.parse(hooksFor(created.id).at(-1)!.body)).toMatchObject({ event: 'test', sequence: 0 });
    const gone = await o.app.inject({ method: 'DELETE', url: `/api/v1/watches/${created.id}`, headers: auth(created.management_token) });
    expect(gone.statusCode).toBe(204);
    const after = await o.app.inject({ method: 'GET', url: `/api/v1/watches/${created.id}`, headers: auth(created.management_token) });
    expect(after.statusCode).toBe(404);
  });
});

describe('verification by TXT record, retries', () => {
  it('is verified by observer-verify=<token> at _observer.<host>, and a failed delivery is retried and logged', async () => {
    const server = await startJavaServer({ motd: 'no token here', onlinePlayers: 1 });
    try {
      const o = await observer({}, () => DNS_TOKEN);
      await o.startBackground();
      const res = await create(o, { address: `watch.observer.test:${server.port}`, edition: 'java', webhook: { kind: 'discord', url: receiver.url('/discord') } });
      expect(res.statusCode).toBe(201);
      const created: Created = res.json();
      expect(created.signing_secret).toBeUndefined();
      expect(created.watch.verification).toMatchObject({ txt_name: '_observer.watch.observer.test', txt_value: `observer-verify=${DNS_TOKEN}` });
      const get = async () => (await o.app.inject({ method: 'GET', url: `/api/v1/watches/${created.id}`, headers: auth(created.management_token) })).json();
      const online = await until(async () => (await get()).state === 'online');
      expect(await get()).toMatchObject({ state: 'online', verification: { verified: true, method: 'dns' } });
      expect(online).toBe(true);
      receiver.answers.push(500);
      await server.close();
      expect(await until(async () => (await get()).deliveries.length >= 2)).toBe(true);
      const log = (await get()).deliveries;
      expect(log.map((d: { attempt: number; status_code: number; error: string | null }) => [d.attempt, d.status_code, d.error])).toEqual([
        [2, 204, null],
        [1, 500, 'HTTP 500'],
      ]);
      const bodies = hooksFor(created.id).map((h) => h.body);
      expect(bodies.length).toBe(2);
      expect(bodies[0]).toBe(bodies[1]);
      const discord = JSON.parse(bodies[0]!);
      expect(discord.embeds[0].title).toBe(`watch.observer.test:${server.port} went offline`);
      const validate = discordValidator();
      expect(validate(discord), JSON.stringify(validate.errors)).toBe(true);
    } finally {
      await server.close();
    }
  });

  it('goes offline once when damping ends, dated from the first failed check the status answers damped', async () => {
    const token = 'observer-0000000000000damp1';
    const server = await startJavaServer({ motd: `damped ${token}`, onlinePlayers: 1 });
    try {
      const o = await observer({ DAMPING_FAILURES: '3', DAMPING_MINUTES: '60' }, () => token);
      await o.startBackground();
      const address = `127.0.0.1:${server.port}`;
      const created: Created = (await create(o, { address, edition: 'java', webhook: { kind: 'json', url: receiver.url() } })).json();
      const get = async () => (await o.app.inject({ method: 'GET', url: `/api/v1/watches/${created.id}`, headers: auth(created.management_token) })).json();
      expect(await until(async () => (await get()).state === 'online')).toBe(true);
      await server.close();
      let since: string | undefined;
      const damped = await until(async () => {
        since ??= (await o.app.inject({ method: 'GET', url: `/api/v1/status/${address}` })).json().failing?.since;
        return since !== undefined;
      });
      expect(damped).toBe(true);
      expect(await until(() => hooksFor(created.id).length >= 1)).toBe(true);
      await new Promise((r) => setTimeout(r, 1_000));
      const hooks = hooksFor(created.id).map((h) => JSON.parse(h.body));
      expect(hooks.map((h) => h.event)).toEqual(['offline']);
      expect(hooks[0]).toMatchObject({ down_since: since, server: { online: false, error_code: 'connection_refused' } });
    } finally {
      await server.close();
    }
  });

  it('is not verified by a TXT record with another token', async () => {
    const server = await startJavaServer({ motd: 'no token here' });
    try {
      const o = await observer();
      const res = await create(o, { address: `watch-other.observer.test:${server.port}`, edition: 'java', webhook: { kind: 'json', url: receiver.url() } });
      const created: Created = res.json();
      const verify = await o.app.inject({ method: 'POST', url: `/api/v1/watches/${created.id}/verify`, headers: auth(created.management_token) });
      expect(verify.json().verification.verified).toBe(false);
    } finally {
      await server.close();
    }
  });
});

describe('unverified watches per client', () => {
  it('are limited by WATCHES_UNVERIFIED_PER_CLIENT', async () => {
    const o = await observer({ WATCHES_UNVERIFIED_PER_CLIENT: '2' });
    const body = { address: 'mc.observer.test', edition: 'java', webhook: { kind: 'json', url: receiver.url() } };
    expect((await create(o, body)).statusCode).toBe(201);
    expect((await create(o, body)).statusCode).toBe(201);
    const third = await create(o, body);
    expect(third.statusCode).toBe(409);
    expect(third.json().error).toBe('too_many_unverified');
  });
});

describe('browser clients on other origins', () => {
  it('may send DELETE with a bearer token (preflight)', async () => {
    const o = await observer();
    const res = await o.app.inject({
      method: 'OPTIONS',
      url: '/api/v1/watches/00000000-0000-4000-8000-000000000000',
      headers: { origin: 'https://panel.example.net', 'access-control-request-method': 'DELETE', 'access-control-request-headers': 'authorization' },
    });
    expect(res.statusCode).toBe(204);
    expect(res.headers['access-control-allow-methods']).toContain('DELETE');
    expect(res.headers['access-control-allow-headers']).toBe('authorization');
  });
});
