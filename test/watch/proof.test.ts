/**
 * Proof of the server, not of a name: a TXT record counts at `_observer.<name>` for the name
 * checks connect to (the SRV target, CNAMEs followed), never at a name that only points
 * elsewhere. And a proof is looked for again: a watch whose proof has not been seen for
 * WATCH_PROOF_GRACE_DAYS is paused, its owner told through its own webhook, and resumes once
 * the proof is back. A private dnsmasq holds the records, a real Minecraft server answers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { testConfig } from '../support/app.js';
import { FakeClock } from '../support/clock.js';
import { startPrivateDns, type PrivateDns } from '../support/dns.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const dir = mkdtempSync(join(tmpdir(), 'observer-watch-proof-'));
let server: RunningJavaServer;
let dns: PrivateDns;
let receiver: WebhookReceiver;
const opened: Array<{ app: { close(): Promise<unknown> } }> = [];

const TYPED = 'observer-00000000000000typed';
const TARGET = 'observer-0000000000000target';
const ALIAS = 'observer-00000000000000alias';

beforeAll(async () => {
  server = await startJavaServer({ motd: 'no token' });
  receiver = await startWebhookReceiver();
  dns = await startPrivateDns([
    // Authoritative for the zone: a name or type it does not hold is NXDOMAIN or NODATA, as on the Internet.
    'local=/proof.test/',
    // play.proof.test points (SRV) at mc.proof.test: its own TXT record proves nothing.
    `srv-host=_minecraft._tcp.play.proof.test,mc.proof.test,${server.port},0,5`,
    'host-record=mc.proof.test,127.0.0.1',
    `txt-record=_observer.play.proof.test,observer-verify=${TYPED}`,
    // good.proof.test points (SRV) at box.proof.test, whose TXT record proves the server.
    `srv-host=_minecraft._tcp.good.proof.test,box.proof.test,${server.port},0,5`,
    'host-record=box.proof.test,127.0.0.1',
    `txt-record=_observer.box.proof.test,observer-verify=${TARGET}`,
    // alias.proof.test is a CNAME of real.proof.test.
    'host-record=real.proof.test,127.0.0.1',
    'cname=alias.proof.test,real.proof.test',
    `txt-record=_observer.alias.proof.test,observer-verify=${ALIAS}`,
    `txt-record=_observer.real.proof.test,observer-verify=${ALIAS}-other`,
  ]);
}, 30_000);

afterAll(async () => {
  for (const o of opened) await o.app.close();
  await server?.close();
  await receiver?.close();
  await dns?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function observer(token: string, env: Record<string, string> = {}, clock?: FakeClock) {
  const o = await composeApp(testConfig({ DATABASE_URL: `sqlite:${join(dir, `${opened.length}.db`)}`, DNS_SERVERS: dns.server, STATUS_CACHE_TTL: '1', ...env }), {
    logger: false,
    icmp: null,
    ...(clock ? { clock } : {}),
    watchTiming: { intervalMs: 60_000, verificationToken: () => token },
  });
  opened.push(o);
  return o;
}

type Observer = Awaited<ReturnType<typeof observer>>;

async function watch(o: Observer, address: string) {
  const res = await o.app.inject({ method: 'POST', url: '/api/v1/watches', payload: { address, edition: 'java', webhook: { kind: 'json', url: receiver.url('/proof') } } });
  expect(res.statusCode).toBe(201);
  const created = res.json() as { id: string; management_token: string; signing_secret: string; watch: { verification: { txt_name: string | null } } };
  const headers = { authorization: `Bearer ${created.management_token}` };
  return {
    created,
    verify: async () => (await o.app.inject({ method: 'POST', url: `/api/v1/watches/${created.id}/verify`, headers })).json(),
    view: async () => (await o.app.inject({ method: 'GET', url: `/api/v1/watches/${created.id}`, headers })).json(),
  };
}

describe('which TXT record proves a server', () => {
  it('not one at the name typed when its SRV record points at another name', async () => {
    const w = await watch(await observer(TYPED), 'play.proof.test');
    expect(w.created.watch.verification.txt_name).toBe('_observer.mc.proof.test');
    expect((await w.verify()).verification).toMatchObject({ verified: false, txt_name: '_observer.mc.proof.test' });
  });

  it('the one at the SRV target, the name checks connect to', async () => {
    const w = await watch(await observer(TARGET), 'good.proof.test');
    expect((await w.verify()).verification).toMatchObject({ verified: true, method: 'dns', txt_name: '_observer.box.proof.test', txt_value: `observer-verify=${TARGET}` });
  });

  it('the one at the canonical name when the name is a CNAME, not the alias\'s', async () => {
    const w = await watch(await observer(ALIAS), `alias.proof.test:${server.port}`);
    expect((await w.verify()).verification).toMatchObject({ verified: false, txt_name: '_observer.real.proof.test' });
  });

  it('none for a server given by IP address: MOTD only', async () => {
    const w = await watch(await observer(TYPED), `127.0.0.1:${server.port}`);
    expect(w.created.watch.verification).toMatchObject({ txt_name: null, txt_value: null });
  });
});

describe('a proof that vanished', () => {
  it('pauses the watch after WATCH_PROOF_GRACE_DAYS, tells its webhook, and resumes when the proof is back', { timeout: 60_000 }, async () => {
    const token = 'observer-00000000000000pause';
    server.setMotd(`proof ${token}`);
    const clock = new FakeClock();
    const o = await observer(token, { WATCH_PROOF_GRACE_DAYS: '1' }, clock);
    const w = await watch(o, `127.0.0.1:${server.port}`);
    expect((await w.verify()).verification.verified).toBe(true);
    const round = async (ms: number) => {
      clock.advance(ms);
      await o.watchScheduler.tick();
      await o.watchDeliveries.tick();
      await o.watchDeliveries.settled();
    };
    await round(61_000);
    expect((await w.view()).state).toBe('online');

    // The token leaves the MOTD; for less than a day nothing changes.
    server.setMotd('proof gone');
    await round(61_000);
    await round(20 * 3_600_000);
    expect((await w.view()).verification.paused_at).toBeNull();
    await round(5 * 3_600_000);
    const paused = await w.view();
    expect(paused.verification.paused_at).not.toBeNull();
    const hooks = receiver.requests.filter((r) => String(r.headers['webhook-id']).startsWith(`${w.created.id}_`));
    expect(hooks.map((h) => JSON.parse(h.body).event)).toEqual(['paused']);
    expect(new Webhook(w.created.signing_secret).verify(hooks[0]!.body, hooks[0]!.headers as Record<string, string>)).toMatchObject({ event: 'paused' });

    // Paused: a state change is not delivered, and no test delivery goes out.
    const port = server.port;
    await server.close();
    await round(61_000);
    await round(61_000);
    const test = await o.app.inject({ method: 'POST', url: `/api/v1/watches/${w.created.id}/test`, headers: { authorization: `Bearer ${w.created.management_token}` } });
    expect(test.statusCode).toBe(409);
    server = await startJavaServer({ port, motd: `proof ${token} again` });
    await round(61_000);
    const resumed = await w.view();
    expect(resumed.verification).toMatchObject({ verified: true, paused_at: null });
    await round(61_000);
    expect((await w.view()).state).toBe('online');
    expect(receiver.requests.filter((r) => String(r.headers['webhook-id']).startsWith(`${w.created.id}_`))).toHaveLength(1);
  });
});
