/**
 * The delivery loop on its own, against receivers on loopback: a webhook that never answers
 * holds its own slot and nothing else, and a webhook host past its budget of the minute gets
 * nothing more, the waiting event losing no attempt. Events are seeded in a real SQLite store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { hashToken } from '../../src/watch/tokens.js';
import { testConfig } from '../support/app.js';
import { watchRow } from '../support/watch-rows.js';
import { startWebhookReceiver, until, type WebhookReceiver } from '../support/webhook-receiver.js';

type Composed = Awaited<ReturnType<typeof composeApp>>;
const dir = mkdtempSync(join(tmpdir(), 'observer-watch-delivery-'));
const receivers: WebhookReceiver[] = [];
const opened: Composed[] = [];
const TOKEN = 'management-token-of-a-delivery-test-000000';

beforeAll(async () => {
  for (const options of [{ hold: true }, {}]) receivers.push(await startWebhookReceiver(options));
});
afterAll(async () => {
  for (const o of opened) await o.app.close();
  for (const receiver of receivers) await receiver.close();
  rmSync(dir, { recursive: true, force: true });
});

async function observer(env: Record<string, string>): Promise<Composed> {
  const o = await composeApp(testConfig({ DATABASE_URL: `sqlite:${join(dir, `${opened.length}.db`)}`, ...env }), { logger: false, icmp: null });
  opened.push(o);
  return o;
}

/** A verified watch with one `offline` event due now, its webhook at `url`. */
async function watchWithEvent(o: Composed, id: string, url: string, client = 'c'): Promise<void> {
  const now = Date.now();
  const row = watchRow(id, { token_hash: hashToken(TOKEN), webhook_url: url, client_hash: client, verified_at: now, proof_seen_at: now, expires_at: null, state: 'online', next_check_at: now + 3_600_000 });
  await o.store.watches.insert(row);
  await o.store.watches.saveObservation(row, { state: 'offline', failures: 1, fail_since: now, above: 0, last_checked_at: now }, { kind: 'offline', body: '{"event":"offline"}', now });
}

describe('the delivery loop', () => {
  it('lets a webhook that never answers hold only its own slot', async () => {
    const [hold, answer] = receivers as [WebhookReceiver, WebhookReceiver];
    const o = await observer({ WATCH_DELIVERY_TIMEOUT_MS: '30000' });
    await watchWithEvent(o, '00000000-0000-4000-8000-0000000000a1', hold.url('/slow'), 'slow client');
    await o.watchDeliveries.tick();
    expect(await until(() => hold.requests.length === 1)).toBe(true);
    // The held attempt is still in flight when the next event is due and delivered.
    await watchWithEvent(o, '00000000-0000-4000-8000-0000000000a2', answer.url('/quick'), 'quick client');
    await o.watchDeliveries.tick();
    expect(await until(async () => (await o.store.watches.pendingCount('00000000-0000-4000-8000-0000000000a2')) === 0)).toBe(true);
    expect(answer.requests.map((r) => r.path)).toEqual(['/quick']);
    expect(await o.store.watches.pendingCount('00000000-0000-4000-8000-0000000000a1')).toBe(1);
    expect(await o.store.watches.deliveries('00000000-0000-4000-8000-0000000000a1', 10)).toEqual([]);
  });

  it('sends a webhook host at most WATCH_DELIVERIES_PER_HOST_PER_MINUTE, and the event over it waits without losing an attempt', async () => {
    const answer = receivers[1]!;
    const o = await observer({ WATCH_DELIVERIES_PER_HOST_PER_MINUTE: '1' });
    const before = answer.requests.length;
    await watchWithEvent(o, '00000000-0000-4000-8000-0000000000b1', answer.url('/b1'));
    await watchWithEvent(o, '00000000-0000-4000-8000-0000000000b2', answer.url('/b2'));
    await o.watchDeliveries.tick();
    await o.watchDeliveries.settled();
    expect(answer.requests.length - before).toBe(1);
    const waiting = await o.store.watches.dueEvents(Date.now() + 3_600_000, 10);
    expect(waiting).toHaveLength(1);
    expect(waiting[0]).toMatchObject({ attempts: 0, lease_token: null });
    expect(waiting[0]!.next_attempt_at!).toBeGreaterThan(Date.now());
    // A test delivery to the same host is refused too, with the budget's headers.
    const res = await o.app.inject({ method: 'POST', url: `/api/v1/watches/${waiting[0]!.watch_id}/test`, headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.statusCode).toBe(429);
    expect(res.json()).toMatchObject({ status: 'error', error: 'webhook_rate_limited' });
    expect(res.headers['ratelimit-policy']).toBe('"webhook-host";q=1;w=60');
    expect(answer.requests.length - before).toBe(1);
  });
});
