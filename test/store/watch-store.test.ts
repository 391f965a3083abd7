/**
 * The watch store on SQLite and on the real PostgreSQL: the conditional writes that let
 * several instances share watches (claims, sequence, leases), the bounded delivery log, expiry,
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

describe.each(backends)('watch store on %s', (_name, open) => {
  it('lets one claim of a due check win, and saves a change only from the sequence it read', async () => {
    const { watches } = await open();
    await watches.insert(watchRow('w1'));
    const [first, second] = await Promise.all([watches.claimDue(200, 10, () => 500), watches.claimDue(200, 10, () => 600)]);
    expect(first.length + second.length).toBe(1);
    const read = (await watches.get('w1'))!;
    const observation = { state: 'offline', failures: 1, fail_since: 200, above: 0, last_checked_at: 200 };
    expect(await watches.saveObservation(read, observation, { kind: 'offline', body: '{}', now: 200 })).toBe(true);
    // Another instance that read the same row: its change is refused, no second event.
    expect(await watches.saveObservation(read, observation, { kind: 'offline', body: '{}', now: 200 })).toBe(false);
    const events = await watches.dueEvents(300, 10);
    expect(events.map((e) => [e.watch_id, e.sequence, e.kind])).toEqual([['w1', 1, 'offline']]);
    expect(await watches.pendingCount('w1')).toBe(1);
  });

  it('leases an attempt to one instance, and keeps the newest 20 attempts of a watch', async () => {
    const { watches } = await open();
    await watches.insert(watchRow('w2', { verified_at: 1 }));
    await watches.saveObservation((await watches.get('w2'))!, { state: 'online', failures: 0, fail_since: null, above: 0, last_checked_at: 1 }, { kind: 'online', body: '{}', now: 1 });
    const [event] = await watches.dueEvents(10, 10);
    const leases = await Promise.all([watches.leaseEvent(event!, 10, 1_000), watches.leaseEvent(event!, 10, 1_000)]);
    expect(leases.filter(Boolean)).toHaveLength(1);
    for (let attempt = 1; attempt <= 25; attempt += 1) {
      await watches.logAttempt({ watch_id: 'w2', sequence: 0, kind: 'test', attempt, at: attempt, status_code: 204, error: null }, 20);
    }
    await watches.finishAttempt({ watch_id: 'w2', sequence: 1, kind: 'online', attempt: 1, at: 30, status_code: 204, error: null }, { outcome: 'delivered' }, 20);
    const log = await watches.deliveries('w2', 100);
    expect(log).toHaveLength(20);
    expect(log[0]).toMatchObject({ sequence: 1, kind: 'online' });
    expect(await watches.pendingCount('w2')).toBe(0);
    expect(await watches.dueEvents(10_000, 10)).toEqual([]);
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
    const db = (store as unknown as { db: import('kysely').Kysely<import('../../src/store/schema.js').Database> }).db;
    const failed = db.transaction().execute(async (trx) => {
      await trx.insertInto('watch_keys').values({ name: 'rolled-back', value: 'x' }).execute();
      store.recordCheck({ serverId: 's1', edition: 'java', host: 'mc.observer.test', port: 25565, checkedAt: Date.now(), online: true, playersOnline: 1, playersMax: 2, latencyMs: 1 });
      // The group commit falls due while this transaction is open.
      const flushed = store.flush();
      await new Promise((resolve) => setTimeout(resolve, 150));
      void flushed.catch(() => {});
      throw new Error('roll back');
    });
    await expect(failed).rejects.toThrow('roll back');
    await store.flush();
    expect(await store.knowsServer('s1')).toBe(true);
    const kept = await sql<{ n: number }>`select count(*) as n from watch_keys where name = 'rolled-back'`.execute(db);
    expect(Number(kept.rows[0]!.n)).toBe(0);
    expect(errors).toEqual([]);
  });
});
