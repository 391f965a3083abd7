/**
 * The watch store on SQLite and on the real PostgreSQL: the conditional writes that let
 * several instances share watches (claims in fair turns, sequence, fenced leases), caps counted
 * and inserted in one step under concurrency, events and logs kept by age and count, expiry,
 * the shared signing key; and on SQLite, a watch transaction and the history's group commit
 * sharing one connection without writing into each other.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore, type HistoryStore } from '../../src/store/index.js';
import { uniqueDatabase } from '../support/instances.js';
import { POSTGRES_URL } from '../support/services.js';
import { watchRow } from '../support/watch-rows.js';

const dir = mkdtempSync(join(tmpdir(), 'observer-watch-store-'));
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const backends: Array<[string, () => Promise<HistoryStore>]> = [
  [
    'SQLite',
    async () => {
      const store = await openStore({ database: { kind: 'sqlite', path: join(dir, `${cleanups.length}.db`) }, checkRetentionDays: 30 });
      cleanups.push(() => store.close());
      return store;
    },
  ],
  [
    'PostgreSQL',
    async () => {
      const database = await uniqueDatabase(POSTGRES_URL);
      const store = await openStore({ database: { kind: 'postgres', url: database.url }, checkRetentionDays: 30 });
      cleanups.push(async () => {
        await store.close();
        await database.drop();
      });
      return store;
    },
  ],
];

const caps = { unverifiedPerClient: 3, perClient: 5, perServer: 2, max: 6 };
const observation = { state: 'offline', failures: 1, fail_since: 200, above: 0, last_checked_at: 200 };

describe.each(backends)('watch store on %s', (_name, open) => {
  it('lets one claim of a due check win, and saves a change only from the sequence it read', async () => {
    const { watches } = await open();
    await watches.insert(watchRow('w1'));
    const [first, second] = await Promise.all([watches.claimDue(200, 10, 500), watches.claimDue(200, 10, 600)]);
    expect(first.length + second.length).toBe(1);
    const read = (await watches.get('w1'))!;
    expect(await watches.saveObservation(read, observation, { kind: 'offline', body: '{}', now: 200 })).toBe(true);
    // Another instance that read the same row: its change is refused, no second event.
    expect(await watches.saveObservation(read, observation, { kind: 'offline', body: '{}', now: 200 })).toBe(false);
    const events = await watches.dueEvents(300, 10);
    expect(events.map((e) => [e.watch_id, e.sequence, e.kind, e.client_hash])).toEqual([['w1', 1, 'offline', 'c']]);
    expect(await watches.pendingCount('w1')).toBe(1);
  });

  it('hands due checks out fairly: verified before proof looks, then clients in turns', async () => {
    const { watches } = await open();
    for (let i = 0; i < 10; i += 1) await watches.insert(watchRow(`many${i}`, { client_hash: 'many', verified_at: 1, next_check_at: i }));
    for (let i = 0; i < 2; i += 1) await watches.insert(watchRow(`few${i}`, { client_hash: 'few', verified_at: 1, next_check_at: 50 + i }));
    await watches.insert(watchRow('unverified', { client_hash: 'new', next_check_at: 0 }));
    await watches.insert(watchRow('paused', { client_hash: 'gone', verified_at: 1, paused_at: 1, next_check_at: 0 }));
    const claimed = await watches.claimDue(100, 4, 1_000);
    expect(claimed.map((w) => w.id)).toEqual(['many0', 'few0', 'many1', 'few1']);
    expect(claimed.every((w) => w.next_check_at === 1_000)).toBe(true);
    const rest = await watches.claimDue(100, 100, 1_000);
    expect(rest.map((w) => w.id).slice(-2).sort()).toEqual(['paused', 'unverified']);
    expect(rest).toHaveLength(10);
  });

  it('counts and inserts a new watch in one step: concurrent creations never pass a cap', async () => {
    const { watches } = await open();
    const tries = Array.from({ length: 20 }, (_, i) => watches.insertWithinCaps(watchRow(`u${i}`, { client_hash: 'one' }), caps));
    const refusals = await Promise.all(tries);
    expect(refusals.filter((r) => r === null)).toHaveLength(3);
    expect(refusals.filter((r) => r === 'unverified')).toHaveLength(17);
    // Verified watches of the client count against WATCHES_PER_CLIENT, all verified ones against WATCHES_MAX.
    for (let i = 0; i < 2; i += 1) await watches.insert(watchRow(`v${i}`, { client_hash: 'one', verified_at: 1, server_key: `s${i}` }));
    expect(await watches.insertWithinCaps(watchRow('over', { client_hash: 'one', verified_at: null }), { ...caps, unverifiedPerClient: 10 })).toBe('client');
    for (let i = 2; i < 6; i += 1) await watches.insert(watchRow(`v${i}`, { client_hash: `other${i}`, verified_at: 1, server_key: `s${i}` }));
    expect(await watches.insertWithinCaps(watchRow('full', { client_hash: 'new' }), caps)).toBe('total');
  });

  it('verifies within WATCHES_PER_SERVER and WATCHES_MAX, one verification at a time', async () => {
    const { watches } = await open();
    for (let i = 0; i < 5; i += 1) await watches.insert(watchRow(`p${i}`, { client_hash: `c${i}`, server_key: 'popular' }));
    const rows = await Promise.all([0, 1, 2, 3, 4].map((i) => watches.get(`p${i}`)));
    const refusals = await Promise.all(rows.map((row) => watches.markVerified(row!, 'motd', 10, null, caps)));
    expect(refusals.filter((r) => r === null)).toHaveLength(2);
    expect(refusals.filter((r) => r === 'server')).toHaveLength(3);
    const verified = (await Promise.all([0, 1, 2, 3, 4].map((i) => watches.get(`p${i}`)))).filter((w) => w!.verified_at !== null);
    expect(verified.map((w) => [w!.verified_by, w!.proof_seen_at, w!.expires_at])).toEqual([
      ['motd', 10, null],
      ['motd', 10, null],
    ]);
  });

  it('finishes an attempt only under the lease it was sent with', async () => {
    const { watches } = await open();
    await watches.insert(watchRow('w2', { verified_at: 1 }));
    await watches.saveObservation((await watches.get('w2'))!, { ...observation, state: 'online' }, { kind: 'online', body: '{}', now: 1 });
    const [event] = await watches.dueEvents(10, 10);
    const leases = await Promise.all([watches.leaseEvent(event!, 10, 1_000, 'a'), watches.leaseEvent(event!, 10, 1_000, 'b')]);
    expect(leases.filter(Boolean)).toHaveLength(1);
    const holder = leases[0] ? 'a' : 'b';
    expect(await watches.dueEvents(999, 10)).toEqual([]);
    // The lease ran out while its holder was still sending: another instance takes the event.
    expect(await watches.leaseEvent(event!, 1_000, 2_000, 'late')).toBe(true);
    const attempt = { watch_id: 'w2', sequence: 1, kind: 'online', attempt: 1, at: 1_500, status_code: 204, error: null };
    expect(await watches.finishAttempt(attempt, { outcome: 'delivered' }, 20, holder)).toBe(false);
    expect(await watches.deliveries('w2', 100)).toEqual([]);
    expect(await watches.finishAttempt(attempt, { outcome: 'delivered' }, 20, 'late')).toBe(true);
    expect(await watches.pendingCount('w2')).toBe(0);
    expect(await watches.deliveries('w2', 100)).toHaveLength(1);
  });

  it('gives a lease back without an attempt, and keeps the newest 20 attempts of a watch', async () => {
    const { watches } = await open();
    await watches.insert(watchRow('w3', { verified_at: 1 }));
    await watches.saveObservation((await watches.get('w3'))!, observation, { kind: 'offline', body: '{}', now: 1 });
    const [event] = await watches.dueEvents(10, 10);
    expect(await watches.leaseEvent(event!, 10, 1_000, 't')).toBe(true);
    await watches.releaseLease(event!, 't', 500);
    expect((await watches.dueEvents(500, 10)).map((e) => [e.sequence, e.attempts])).toEqual([[1, 0]]);
    for (let attempt = 1; attempt <= 25; attempt += 1) {
      await watches.logAttempt({ watch_id: 'w3', sequence: 0, kind: 'test', attempt, at: attempt, status_code: 204, error: null }, 20);
    }
    expect(await watches.deliveries('w3', 100)).toHaveLength(20);
  });

  it('allows one test delivery a minute per watch', async () => {
    const { watches } = await open();
    await watches.insert(watchRow('t1', { verified_at: 1 }));
    const claims = await Promise.all([watches.claimTest('t1', 100_000, 60_000), watches.claimTest('t1', 100_000, 60_000)]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await watches.claimTest('t1', 159_999, 60_000)).toBe(false);
    expect(await watches.claimTest('t1', 160_000, 60_000)).toBe(true);
  });

  it('keeps events and logs by age and count, and deletes watches paused too long', async () => {
    const { watches } = await open();
    await watches.insert(watchRow('busy', { verified_at: 1 }));
    for (let i = 1; i <= 30; i += 1) {
      const watch = (await watches.get('busy'))!;
      await watches.saveObservation(watch, { ...observation, last_checked_at: i }, { kind: i % 2 ? 'offline' : 'online', body: '{}', now: i * 1_000 });
    }
    await watches.logAttempt({ watch_id: 'busy', sequence: 1, kind: 'offline', attempt: 1, at: 1_000, status_code: 204, error: null }, 20);
    await watches.logAttempt({ watch_id: 'busy', sequence: 30, kind: 'online', attempt: 1, at: 90_000, status_code: 204, error: null }, 20);
    await watches.insert(watchRow('paused', { verified_at: 1, paused_at: 5 }));
    await watches.prune(100_000, { eventMaxAgeMs: 75_000, eventsPerWatch: 20, logMaxAgeMs: 50_000, pausedBefore: 10 });
    // The newest 20 events are left (11 to 30); of those, the ones older than 75 s are given up.
    expect(await watches.pendingCount('busy')).toBe(6);
    const due = await watches.dueEvents(100_000, 100);
    expect(due.map((e) => e.sequence)).toEqual([25, 26, 27, 28, 29, 30]);
    expect((await watches.deliveries('busy', 100)).map((d) => d.sequence)).toEqual([30]);
    expect(await watches.get('paused')).toBeUndefined();
    // Finished events older than the bound go at the next pass.
    await watches.prune(100_000, { eventMaxAgeMs: 75_000, eventsPerWatch: 20, logMaxAgeMs: 50_000, pausedBefore: 10 });
    expect(await watches.dueEvents(100_000, 100)).toHaveLength(6);
  });

  it('deletes unverified watches past their window, and keeps one signing key', async () => {
    const { watches } = await open();
    await watches.insert(watchRow('old', { expires_at: 50 }));
    await watches.insert(watchRow('verified', { expires_at: null, verified_at: 10 }));
    expect(await watches.expireUnverified(100)).toBe(1);
    expect(await watches.get('old')).toBeUndefined();
    expect(await watches.get('verified')).toBeDefined();
    const keys = await Promise.all([watches.key('signing', () => 'a'), watches.key('signing', () => 'b')]);
    expect(keys[0]).toBe(keys[1]);
  });
});

describe('SQLite: a watch transaction and the group commit', () => {
  it('do not write into each other', async () => {
    const errors: unknown[] = [];
    const store = await openStore({ database: { kind: 'sqlite', path: join(dir, 'shared.db') }, checkRetentionDays: 30 }, undefined, {
      onError: (error) => errors.push(error),
    });
    cleanups.push(() => store.close());
    const { watches } = store as unknown as { watches: import('../../src/store/watches/watch-store.js').WatchStore };
    await watches.insert(watchRow('w', { verified_at: 1 }));
    const watch = (await watches.get('w'))!;
    const observation = { state: 'online', failures: 0, fail_since: null, above: 0, last_checked_at: 1 };
    store.recordCheck({ serverId: 's1', edition: 'java', host: 'mc.observer.test', port: 25565, checkedAt: Date.now(), online: true, playersOnline: 1, playersMax: 2, latencyMs: 1 });
    // Two saves from the same read of the watch, the group commit between them: the second
    // one's transaction is rolled back (the first changed the watch), the batch is not.
    const [first, , second] = await Promise.all([
      watches.saveObservation(watch, observation, { kind: 'online', body: '{}', now: 1 }),
      store.flush(),
      watches.saveObservation(watch, { ...observation, state: 'offline' }, { kind: 'offline', body: '{}', now: 2 }),
    ]);
    expect([first, second]).toEqual([true, false]);
    expect(await store.knowsServer('s1')).toBe(true);
    expect((await watches.get('w'))!.state).toBe('online');
    const db = (store as unknown as { db: import('kysely').Kysely<import('../../src/store/schema.js').Database> }).db;
    const events = await sql<{ kind: string }>`select kind from watch_events where watch_id = 'w'`.execute(db);
    expect(events.rows.map((row) => row.kind)).toEqual(['online']);
    expect(errors).toEqual([]);
  });
});
