/**
 * Watches end to end on SQLite: a real minecraft-protocol server that stops and starts again,
 * a webhook receiver on loopback, verification by MOTD and by a TXT record (dnsmasq), the
 * webhooks' own guard, management with the bearer token, retries and the delivery log,
 * Standard Webhooks signatures checked with the `standardwebhooks` package, the caps.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { testConfig } from '../support/app.js';
import { watchRow } from '../support/watch-rows.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { startWebhookReceiver, until, type WebhookReceiver } from '../support/webhook-receiver.js';
import { discordValidator } from './discord-schema.js';

type Composed = Awaited<ReturnType<typeof composeApp>>;

const ENV = { STATUS_CACHE_TTL: '1', DAMPING_FAILURES: '1', PING_TIMEOUT_MS: '5000', RATE_LIMIT_GENERAL: '1000', WATCH_CHECKS_PER_MINUTE: '6000' };
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
  return receiver.requests.filter((r) => String(r.headers['webhook-id'] ?? '').startsWith(`${id}_`));
}

/** The receiver's headers as the `standardwebhooks` package takes them. */
function signedHeaders(hook: { headers: Record<string, unknown> }): Record<string, string> {
  const { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature } = hook.headers;
  return { 'webhook-id': String(id), 'webhook-timestamp': String(timestamp), 'webhook-signature': String(signature) };
}

describe('webhook targets', () => {
  it('are refused on loopback, private and metadata addresses however spelled, whatever TARGET_ALLOWLIST allows', async () => {
    // Servers on loopback and the LAN may be watched; webhooks still may not go there.
    const o = await observer({ TARGET_ALLOWLIST: '127.0.0.0/8,::1/128,10.0.0.0/8,192.168.0.0/16,169.254.0.0/16,fd00::/8', WEBHOOK_ALLOWLIST: '' });
    const before = receiver.requests.length;
    const port = receiver.port;
    const urls = [
      `http://127.0.0.1:${port}/hook`,
      `http://[::1]:${port}/hook`,
      `http://localhost:${port}/hook`,
      `http://LOCALHOST.:${port}/hook`,
      `http://127.1:${port}/`,
      `http://2130706433:${port}/`,
      `http://0x7f.0.0.1:${port}/`,
      `http://0177.0.0.1:${port}/`,
      `http://[::ffff:127.0.0.1]:${port}/`,
      `http://[::ffff:7f00:1]:${port}/`,
      `http://any.observer.test:${port}/hook`,
      'http://192.168.1.1/admin',
      'http://10.0.0.1:6379/',
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00::1]/',
    ];
    for (const url of urls) {
      const res = await create(o, { address: 'mc.observer.test', edition: 'java', webhook: { kind: 'json', url } });
      expect(res.statusCode, url).toBe(400);
      expect(res.json(), url).toMatchObject({ status: 'error', error: 'webhook_refused' });
    }
    // A public address on a system port: refused before anything connects.
    const system = await create(o, { address: 'mc.observer.test', edition: 'java', webhook: { kind: 'json', url: 'http://1.1.1.1:22/' } });
    expect(system.statusCode).toBe(400);
    expect(system.json()).toMatchObject({ error: 'webhook_refused', message: expect.stringContaining('port 80, 443 or 1024 to 65535') });
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
    expect(created.signing_secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
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
    expect(hooks.map((h) => h.headers['webhook-id'])).toEqual([`${created.id}_1`, `${created.id}_2`]);
    const receiving = new Webhook(created.signing_secret!);
    for (const hook of hooks) {
      // How a receiver checks a delivery (docs/watches.md): the Standard Webhooks package over the raw body.
      expect(receiving.verify(hook.body, signedHeaders(hook))).toEqual(JSON.parse(hook.body));
      expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(hook.body, signedHeaders(hook))).toThrow('No matching signature found');
      expect(() => receiving.verify(hook.body.replace('"sequence"', '"sequence" '), signedHeaders(hook))).toThrow('No matching signature found');
      expect(hook.headers['content-type']).toBe('application/json');
      expect(Object.keys(hook.headers).filter((name) => name.startsWith('x-observer'))).toEqual([]);
    }
    // A delivery recorded and replayed later is refused by its timestamp (the package's 5 minutes).
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 6 * 60_000);
      expect(() => receiving.verify(hooks[0]!.body, signedHeaders(hooks[0]!))).toThrow('Message timestamp too old');
    } finally {
      vi.useRealTimers();
    }
    const [down, up] = hooks.map((h) => JSON.parse(h.body));
    expect(down).toMatchObject({ watch_id: created.id, sequence: 1, address: `127.0.0.1:${server.port}`, edition: 'java', server: { online: false } });
    expect(up).toMatchObject({ sequence: 2, server: { online: true, players_online: 5, players_max: 20, motd: 'Back again' } });
    // Without PUBLIC_URL a body links nowhere: no link is taken from a request's Host header.
    expect(up.url).toBeNull();
    const view = await get();
    expect(view.page_url).toBeNull();
    expect(view.deliveries.map((d: { event: string; result: string; status_code: number }) => [d.event, d.result, d.status_code])).toEqual([
      ['online', 'delivered', 204],
      ['offline', 'delivered', 204],
    ]);
  });

  it('sends a test delivery once verified, at most one a minute, and ends the watch on DELETE', async () => {
    const test = await o.app.inject({ method: 'POST', url: `/api/v1/watches/${created.id}/test`, headers: auth(created.management_token) });
    expect(test.json()).toEqual({ delivered: true, result: 'delivered', status_code: 204 });
    const sent = hooksFor(created.id).at(-1)!;
    expect(JSON.parse(sent.body)).toMatchObject({ event: 'test', sequence: 0 });
    expect(sent.headers['webhook-id']).toMatch(new RegExp(`^${created.id}_test_[0-9a-f-]{36}$`));
    expect(new Webhook(created.signing_secret!).verify(sent.body, signedHeaders(sent))).toMatchObject({ event: 'test' });
    const count = receiver.requests.length;
    const again = await o.app.inject({ method: 'POST', url: `/api/v1/watches/${created.id}/test`, headers: auth(created.management_token) });
    expect(again.statusCode).toBe(429);
    expect(again.json()).toMatchObject({ status: 'error', error: 'test_rate_limited' });
    expect(Number(again.headers['retry-after'])).toBeGreaterThan(0);
    expect(again.headers['ratelimit-policy']).toBe('"watch-test";q=1;w=60');
    expect(receiver.requests.length).toBe(count);
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
      expect(log.map((d: { attempt: number; status_code: number; result: string }) => [d.attempt, d.status_code, d.result])).toEqual([
        [2, 204, 'delivered'],
        [1, 500, 'refused'],
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

describe('caps', () => {
  const body = () => ({ address: 'mc.observer.test', edition: 'java', webhook: { kind: 'json', url: receiver.url() } });
  const from = (o: Composed, remoteAddress: string) => o.app.inject({ method: 'POST', url: '/api/v1/watches', payload: body(), remoteAddress });

  it('WATCHES_UNVERIFIED_PER_CLIENT: unverified watches one client may hold', async () => {
    const o = await observer({ WATCHES_UNVERIFIED_PER_CLIENT: '2' });
    expect((await create(o, body())).statusCode).toBe(201);
    expect((await create(o, body())).statusCode).toBe(201);
    const third = await create(o, body());
    expect(third.statusCode).toBe(409);
    expect(third.json()).toMatchObject({ status: 'error', error: 'too_many_unverified' });
  });

  it('WATCHES_PER_CLIENT: an IPv4 address, or an IPv6 /48 whatever its /64s, holds that many watches', async () => {
    const o = await observer({ WATCHES_PER_CLIENT: '2', WATCHES_UNVERIFIED_PER_CLIENT: '10', TRUST_PROXY: 'false' });
    expect((await from(o, '2001:db8:1:1::1')).statusCode).toBe(201);
    expect((await from(o, '2001:db8:1:2::1')).statusCode).toBe(201);
    const third = await from(o, '2001:db8:1:ffff::9');
    expect(third.statusCode).toBe(409);
    expect(third.json()).toMatchObject({ status: 'error', error: 'too_many_watches' });
    expect((await from(o, '2001:db8:2::1')).statusCode).toBe(201);
    expect((await from(o, '127.0.0.2')).statusCode).toBe(201);
    expect((await from(o, '127.0.0.2')).statusCode).toBe(201);
    expect((await from(o, '127.0.0.2')).statusCode).toBe(409);
  });

  it('WATCHES_MAX: past it a creation is a 429 watch_capacity, nothing stretched', async () => {
    const o = await observer({ WATCHES_MAX: '1' });
    await o.store.watches.insert(watchRow('00000000-0000-4000-8000-000000000001', { verified_at: 1, expires_at: null, next_check_at: Date.now() + 3_600_000 }));
    const res = await create(o, body());
    expect(res.statusCode).toBe(429);
    expect(res.json()).toMatchObject({ status: 'error', error: 'watch_capacity' });
    expect(res.headers['retry-after']).toBe('3600');
    // The client's own rate limit is not what refused it: its tier's fields, not a made-up window.
    expect(res.headers['ratelimit-policy']).toMatch(/^"general";q=\d+;w=60$/);
  });

  it('WATCHES_PER_SERVER: a proven watch past it stays unverified, and /verify says why', async () => {
    const token = 'observer-000000000000perserver';
    const server = await startJavaServer({ motd: `popular ${token}` });
    try {
      const o = await observer({ WATCHES_PER_SERVER: '1', WATCHES_UNVERIFIED_PER_CLIENT: '5' }, () => token);
      const address = `127.0.0.1:${server.port}`;
      const first: Created = (await create(o, { ...body(), address })).json();
      const second: Created = (await create(o, { ...body(), address })).json();
      const verify = (c: Created) => o.app.inject({ method: 'POST', url: `/api/v1/watches/${c.id}/verify`, headers: auth(c.management_token) });
      expect((await verify(first)).json().verification.verified).toBe(true);
      const refused = await verify(second);
      expect(refused.statusCode).toBe(409);
      expect(refused.json()).toMatchObject({ status: 'error', error: 'too_many_server_watches' });
      const view = await o.app.inject({ method: 'GET', url: `/api/v1/watches/${second.id}`, headers: auth(second.management_token) });
      expect(view.json().verification.verified).toBe(false);
    } finally {
      await server.close();
    }
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
