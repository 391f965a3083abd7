/**
 * What a look-up writes to the history store (docs/hostile-clients.md, "Storage"): nothing for
 * a name that did not resolve or a look-up refused before its ping; a server row (its check)
 * only for a server the store knows or within the client's NEW_SERVERS_PER_CLIENT_PER_DAY; a
 * look-up row only once there is a result, for a server the store keeps. A real SQLite store,
 * a fake clock, the rate limiter's memory store as the counter; names from the shared zone.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from '../../src/http/rate-limit.js';
import { createStatusService, serverId } from '../../src/status/index.js';
import { openStore } from '../../src/store/index.js';
import type { HistoryStore } from '../../src/store/types.js';
import { testConfig } from '../support/app.js';
import { FakeClock } from '../support/clock.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';

let java: RunningJavaServer;
beforeAll(async () => {
  java = await startJavaServer({ motd: 'recorded', onlinePlayers: 1 });
});
afterAll(async () => {
  await java.close();
});

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** A service over a fresh SQLite store whose writes are noted as `check:<host>` and `lookup:<host>:<client>`. */
async function setup(env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'observer-recording-'));
  const clock = new FakeClock();
  const config = testConfig({ DATABASE_URL: `sqlite:${join(dir, 'observer.db')}`, ...env });
  const store = (await openStore(config, clock)) as HistoryStore;
  const counter = new MemoryRateLimitStore(() => clock.now());
  cleanups.push(async () => {
    counter.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const hosts = new Map<string, string>();
  const writes: string[] = [];
  const { recordCheck, recordLookup } = { recordCheck: store.recordCheck.bind(store), recordLookup: store.recordLookup.bind(store) };
  store.recordCheck = (check) => {
    hosts.set(check.serverId, check.host);
    writes.push(`check:${check.host}`);
    recordCheck(check);
  };
  store.recordLookup = (id, clientKey) => {
    writes.push(`lookup:${hosts.get(id) ?? id}:${clientKey}`);
    recordLookup(id, clientKey);
  };
  const status = createStatusService({ config, clock, icmp: null, store, budgetCounter: counter });
  return { status, store, clock, writes };
}

const named = (label: string) => `${label}.any.observer.test:${java.port}`;
const host = (label: string) => `${label}.any.observer.test`;

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => null,
    (error: unknown) => error,
  );
}

describe('StatusService: no rows without a result', () => {
  it('writes nothing for a name without records (404) or a refused target (400)', async () => {
    const { status, store, writes } = await setup({ TARGET_ALLOWLIST: '127.0.0.1/32' });
    expect(await rejection(status.lookup('missing.observer.test', 'java', { clientKey: 'c1' }))).toMatchObject({ code: 'host_not_found' });
    expect(await rejection(status.lookup('v6.observer.test', 'java', { clientKey: 'c1' }))).toMatchObject({ code: 'target_refused' });
    await status.recorded();
    await store.flush();
    expect(writes).toEqual([]);
  });

  it('writes nothing for a look-up refused by the target budget', async () => {
    const { status, writes } = await setup({ TARGET_PINGS_PER_MINUTE: '1' });
    await status.lookup(named('first'), 'java', { clientKey: 'c1' });
    expect(await rejection(status.lookup(named('second'), 'java', { clientKey: 'c1' }))).toMatchObject({ code: 'target_rate_limited' });
    await status.recorded();
    expect(writes).toEqual([`check:${host('first')}`, `lookup:${host('first')}:c1`]);
  });

  it('records the look-up of a cached answer once the answer is there', async () => {
    const { status, writes } = await setup();
    await status.lookup(named('cached'), 'java', { clientKey: 'c1' });
    await status.lookup(named('cached'), 'java', { clientKey: 'c2' });
    await status.recorded();
    expect(writes).toEqual([`check:${host('cached')}`, `lookup:${host('cached')}:c1`, `lookup:${host('cached')}:c2`]);
  });
});

describe('StatusService: NEW_SERVERS_PER_CLIENT_PER_DAY', () => {
  it('records exactly the cap of new servers a client causes a day; past it, answers without recording', async () => {
    const { status, store, clock, writes } = await setup({ NEW_SERVERS_PER_CLIENT_PER_DAY: '2' });
    for (const label of ['n1', 'n2', 'n3']) {
      expect((await status.lookup(named(label), 'java', { clientKey: 'c1' })).status.online).toBe(true);
    }
    await status.recorded();
    expect(writes).toEqual([`check:${host('n1')}`, `lookup:${host('n1')}:c1`, `check:${host('n2')}`, `lookup:${host('n2')}:c1`]);
    await store.flush();
    expect(await store.history(serverId('java', host('n3'), java.port), '24h')).toBeNull();

    // Another client's look-up of the unrecorded server: a cached answer writes no row either.
    writes.length = 0;
    expect((await status.lookup(named('n3'), 'java', { clientKey: 'c2' })).cache).toBe('HIT');
    // Known servers cost nothing of the cap: re-checking them is recorded.
    clock.advance(6 * 60_000);
    await status.lookup(named('n1'), 'java', { clientKey: 'c1' });
    await status.recorded();
    expect(writes).toEqual([`check:${host('n1')}`, `lookup:${host('n1')}:c1`]);

    // The next day the client may add servers again.
    clock.advance(24 * 60 * 60_000);
    await status.lookup(named('n4'), 'java', { clientKey: 'c1' });
    await status.recorded();
    expect(writes.slice(-2)).toEqual([`check:${host('n4')}`, `lookup:${host('n4')}:c1`]);
  });

  it('a background refresh (no client) never adds a server: only known servers get its checks', async () => {
    const { status, clock, writes } = await setup({ NEW_SERVERS_PER_CLIENT_PER_DAY: '1' });
    await status.lookup(named('added'), 'java', { clientKey: 'c1' });
    await status.lookup(named('refused'), 'java', { clientKey: 'c1' });
    await status.recorded();
    writes.length = 0;
    clock.advance(6 * 60_000);
    for (const label of ['added', 'refused', 'never-asked']) {
      expect((await status.lookup(named(label), 'java', { background: true })).cache).toBe('MISS');
    }
    await status.recorded();
    expect(writes).toEqual([`check:${host('added')}`]);
  });

  it('asks the store whether a server is new: one known from before counts nothing', async () => {
    const { status, store, writes } = await setup({ NEW_SERVERS_PER_CLIENT_PER_DAY: '1' });
    store.recordCheck({
      serverId: serverId('java', host('old'), java.port),
      edition: 'java',
      host: host('old'),
      port: java.port,
      checkedAt: Date.parse('2026-11-20T00:00:00Z'),
      online: true,
      playersOnline: 1,
      playersMax: 10,
      latencyMs: 1,
    });
    await store.flush();
    writes.length = 0;
    await status.lookup(named('old'), 'java', { clientKey: 'c1' });
    await status.lookup(named('fresh'), 'java', { clientKey: 'c1' });
    await status.recorded();
    expect(writes).toEqual([`check:${host('old')}`, `lookup:${host('old')}:c1`, `check:${host('fresh')}`, `lookup:${host('fresh')}:c1`]);
  });
});
