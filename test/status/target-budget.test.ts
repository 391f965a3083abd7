/**
 * The per-destination-IP ping budget (TARGET_PINGS_PER_MINUTE, docs/hostile-clients.md): many
 * names pointing at one address cannot make Observer ping it more than the budget a minute,
 * whoever asks. The names come from the shared zone's wildcard (`*.any.observer.test` →
 * 127.0.0.1); time is a fake clock, the counter the rate limiter's own memory store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ObserverError } from '../../src/core/errors.js';
import { MemoryRateLimitStore } from '../../src/http/rate-limit.js';
import { createStatusService, STALE_WHILE_REVALIDATE_MS } from '../../src/status/index.js';
import { testConfig } from '../support/app.js';
import { FakeClock } from '../support/clock.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';

let java: RunningJavaServer;
beforeAll(async () => {
  java = await startJavaServer({ motd: 'budget', onlinePlayers: 3 });
});
afterAll(async () => {
  await java.close();
});

function service(clock: FakeClock, budget: number) {
  const counter = new MemoryRateLimitStore(() => clock.now());
  const status = createStatusService({
    config: testConfig({ TARGET_PINGS_PER_MINUTE: String(budget) }),
    clock,
    icmp: null,
    budgetCounter: counter,
  });
  return { status, close: () => counter.close() };
}

const name = (label: string) => `${label}.any.observer.test:${java.port}`;

async function refusal(promise: Promise<unknown>): Promise<ObserverError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ObserverError);
  return error as ObserverError;
}

describe('StatusService: pings per target IP', () => {
  it('allows exactly TARGET_PINGS_PER_MINUTE look-ups of one IP a minute, across names, then 429 until the window ends', async () => {
    const clock = new FakeClock();
    const { status, close } = service(clock, 2);
    try {
      expect((await status.lookup(name('a'), 'java')).status.online).toBe(true);
      expect((await status.lookup(name('b'), 'java')).status.online).toBe(true);
      const connections = java.connections();
      const error = await refusal(status.lookup(name('c'), 'java'));
      expect(error).toMatchObject({ code: 'target_rate_limited', statusCode: 429 });
      expect(error.message).toMatch(/at most 2 times a minute/);
      expect(error.message).not.toContain('127.0.0.1');
      expect(Number(error.headers['Retry-After'])).toBe(60);
      expect(java.connections()).toBe(connections);
      // Cached answers cost nothing: the names already pinged still answer.
      expect((await status.lookup(name('a'), 'java')).cache).toBe('HIT');
      clock.advance(59_000);
      expect(Number((await refusal(status.lookup(name('c'), 'java'))).headers['Retry-After'])).toBe(1);
      clock.advance(1_000);
      expect((await status.lookup(name('c'), 'java')).status.online).toBe(true);
    } finally {
      close();
    }
  });

  it('over the budget serves the last success stale rather than refusing', async () => {
    const clock = new FakeClock();
    const { status, close } = service(clock, 1);
    try {
      const first = await status.lookup(name('kept'), 'java');
      clock.advance(60_000 + STALE_WHILE_REVALIDATE_MS + 1_000);
      await status.lookup(name('other'), 'java');
      const answer = await status.lookup(name('kept'), 'java');
      expect(answer).toMatchObject({ cache: 'STALE', status: { stale: true, online: true } });
      expect(answer.status.checked_at).toBe(first.status.checked_at);
    } finally {
      close();
    }
  });

  it('without a budget store (createStatusService alone) does not limit', async () => {
    const clock = new FakeClock();
    const status = createStatusService({ config: testConfig({ TARGET_PINGS_PER_MINUTE: '1' }), clock, icmp: null });
    for (const label of ['n1', 'n2', 'n3']) expect((await status.lookup(name(label), 'java')).status.online).toBe(true);
  });
});
