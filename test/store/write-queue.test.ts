/**
 * The group commit (write-queue.ts): windows, graceful stop, a database that refuses
 * writes (retried with bounded backoff, in order, never blocking the caller), and the bound.
 * The failing writer is a fake on purpose (hostile behaviour); the graceful-stop test runs
 * the real SQLite store.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteBinding } from '../../src/store/sqlite/binding.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { openStore } from '../../src/store/index.js';
import type { CheckRecord } from '../../src/store/types.js';
import { refusedByDatabase } from '../../src/store/history/batch-ledger.js';
import { ATTEMPTS_BEFORE_SET_ASIDE, HistoryBufferFullError, WriteQueue, type WriteBatch } from '../../src/store/history/write-queue.js';

const dir = mkdtempSync(join(tmpdir(), 'observer-queue-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function check(i: number, serverId: string = randomUUID()): CheckRecord {
  return {
    serverId,
    edition: 'java',
    host: `s${i}.example.com`,
    port: 25565,
    checkedAt: 1_750_000_000_000 + i,
    online: true,
    playersOnline: i % 10,
    playersMax: 100,
    latencyMs: 5,
  };
}

describe('WriteQueue', () => {
  it('writes a full window at once and the rest at the end of the window, one batch each', async () => {
    const batches: WriteBatch[] = [];
    const queue = new WriteQueue((b) => void batches.push(b), { windowMs: 30, windowRows: 100 });
    for (let i = 0; i < 250; i++) queue.enqueueCheck(check(i));
    queue.enqueueCounts({ totalRequests: 3 });
    await vi.waitFor(() => expect(batches.flatMap((b) => b.checks)).toHaveLength(250), { timeout: 2000, interval: 10 });
    expect(batches.map((b) => b.checks.length)).toEqual([100, 150]);
    expect(batches.flatMap((b) => b.checks.map((c) => c.host))).toEqual(Array.from({ length: 250 }, (_, i) => `s${i}.example.com`));
    expect(queue.health()).toEqual({ state: 'ok', buffered: 0, dropped: 0, deadLettered: 0, failedWrites: 0 });
    await queue.stop();
  });

  it('retries a refusing database with growing, bounded pauses, in order, and never blocks the caller', async () => {
    const attempts: number[] = [];
    const written: string[] = [];
    const setAside: WriteBatch[] = [];
    let refuse = true;
    let refused = 0;
    const queue = new WriteQueue(
      (batch) => {
        // Attempts of the rows, not the writes of nothing that ask whether the database takes any.
        if (batch.checks.length > 0) attempts.push(Date.now());
        if (refuse) {
          refused += 1;
          return Promise.reject(new Error('connection refused'));
        }
        for (const c of batch.checks) written.push(c.host);
        return Promise.resolve();
      },
      // The database refuses every write, a batch of nothing too: an outage, never a batch to set aside.
      { windowMs: 5, retryMinMs: 20, retryMaxMs: 80, onError: () => {}, setAside: async (batch) => void setAside.push(batch) },
    );
    for (let i = 0; i < 20; i++) queue.enqueueCheck(check(i)); // returns at once: nothing awaits the database
    await vi.waitFor(() => expect(attempts.length).toBeGreaterThanOrEqual(6), { timeout: 5000, interval: 10 });
    expect(queue.health()).toMatchObject({ state: 'down', buffered: 20 });
    // Checks queued during the outage go behind the ones that failed.
    for (let i = 20; i < 30; i++) queue.enqueueCheck(check(i));
    const gaps = attempts.slice(1).map((t, i) => t - attempts[i]!);
    // Backoff: 20, 40, 80, 80, … ms (±25% jitter): never a busy loop, never above the cap by much.
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(10);
    expect(gaps.at(-1)!).toBeGreaterThanOrEqual(50);
    refuse = false;
    await vi.waitFor(() => expect(written).toHaveLength(30), { timeout: 5000, interval: 10 });
    expect(written).toEqual(Array.from({ length: 30 }, (_, i) => `s${i}.example.com`));
    expect(setAside).toEqual([]);
    expect(queue.health()).toEqual({ state: 'ok', buffered: 0, dropped: 0, deadLettered: 0, failedWrites: refused });
    await queue.stop();
  });

  it('never sets a batch aside for a failure that says the database cannot write now, while a write of nothing goes through', async () => {
    // A full disk: the rows do not fit, a write of nothing does.
    let full = true;
    let failedAttempts = 0;
    const written: string[] = [];
    const setAside: WriteBatch[] = [];
    const queue = new WriteQueue(
      (batch) => {
        if (full && batch.checks.length > 0) {
          failedAttempts += 1;
          return Promise.reject(Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }));
        }
        for (const c of batch.checks) written.push(c.host);
        return Promise.resolve();
      },
      { windowMs: 5, retryMinMs: 5, retryMaxMs: 10, onError: () => {}, refused: refusedByDatabase, setAside: async (batch) => void setAside.push(batch) },
    );
    for (let i = 0; i < 20; i++) queue.enqueueCheck(check(i));
    await vi.waitFor(() => expect(failedAttempts).toBeGreaterThan(3 * ATTEMPTS_BEFORE_SET_ASIDE), { timeout: 5000, interval: 5 });
    expect(queue.health()).toMatchObject({ state: 'down', buffered: 20, deadLettered: 0 });
    full = false;
    await queue.stop();
    expect(written).toEqual(Array.from({ length: 20 }, (_, i) => `s${i}.example.com`));
    expect(setAside).toEqual([]);
  });

  it('reports the first failure of an outage, each change of its cause, and every tenth failure', async () => {
    const reported: string[] = [];
    const causes = ['Connection terminated unexpectedly', 'cannot execute INSERT in a read-only transaction'];
    let attempts = 0;
    const queue = new WriteQueue(
      () => {
        attempts += 1;
        // Two lost connections, then a database that refuses every write for the same reason.
        return Promise.reject(new Error(causes[attempts <= 2 ? 0 : 1]));
      },
      { windowMs: 1, retryMinMs: 1, retryMaxMs: 2, onError: (e) => reported.push(`${attempts}: ${(e as Error).message}`) },
    );
    queue.enqueueCheck(check(0));
    await vi.waitFor(() => expect(attempts).toBeGreaterThanOrEqual(20), { timeout: 5000, interval: 5 });
    await queue.stop(0).catch(() => {});
    expect(reported.slice(0, 4)).toEqual([`1: ${causes[0]}`, `3: ${causes[1]}`, `10: ${causes[1]}`, `20: ${causes[1]}`]);
  });

  it('holds a batch the database refuses while setting it aside fails too, and lets the rows behind it flow once it is set aside', async () => {
    const refusal = Object.assign(new Error('NOT NULL constraint failed: servers.host'), { code: 'SQLITE_CONSTRAINT_NOTNULL' });
    let setAsideWorks = false;
    const setAsideTries: number[] = [];
    const keptAside: WriteBatch[] = [];
    const written: string[] = [];
    const queue = new WriteQueue(
      (batch) => {
        if (batch.checks.some((c) => c.host === 'bad.example.com')) return Promise.reject(refusal);
        for (const c of batch.checks) written.push(c.host);
        return Promise.resolve();
      },
      {
        windowMs: 5,
        retryMinMs: 5,
        retryMaxMs: 10,
        onError: () => {},
        refused: refusedByDatabase,
        setAside: async (batch) => {
          setAsideTries.push(batch.checks.length);
          if (!setAsideWorks) throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
          keptAside.push(batch);
        },
      },
    );
    queue.enqueueCheck({ ...check(0), host: 'bad.example.com' });
    await vi.waitFor(() => expect(setAsideTries.length).toBeGreaterThanOrEqual(3), { timeout: 5000, interval: 5 });
    // Still held, counted in the buffer, and rows queued meanwhile wait behind it.
    for (let i = 1; i <= 5; i++) queue.enqueueCheck(check(i));
    expect(queue.health()).toMatchObject({ state: 'down', buffered: 6, deadLettered: 0 });
    expect(written).toEqual([]);
    setAsideWorks = true;
    await queue.stop();
    expect(keptAside.map((b) => b.checks.map((c) => c.host))).toEqual([['bad.example.com']]);
    expect(written).toEqual(Array.from({ length: 5 }, (_, i) => `s${i + 1}.example.com`));
    expect(queue.health().deadLettered).toBe(1);
  });

  it('drops past its bound, counts and reports the drops, and keeps counting increments', async () => {
    const errors: unknown[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const batches: WriteBatch[] = [];
    const queue = new WriteQueue(
      async (b) => {
        await gate;
        batches.push(b);
      },
      { windowMs: 1, windowRows: 10, maxRows: 50, onError: (e) => errors.push(e) },
    );
    for (let i = 0; i < 80; i++) {
      queue.enqueueCheck(check(i));
      queue.enqueueCounts({ totalChecks: 1 });
    }
    expect(queue.health()).toMatchObject({ state: 'degraded', buffered: 50, dropped: 30 });
    expect(errors).toHaveLength(1); // rate-limited: one report for the burst
    expect(errors[0]).toBeInstanceOf(HistoryBufferFullError);
    release();
    await queue.stop();
    expect(batches.flatMap((b) => b.checks)).toHaveLength(50);
    expect(batches.reduce((n, b) => n + (b.counters.get('totalChecks') ?? 0), 0)).toBe(80);
  });

  it('gives up a stop after its deadline when the database stays down, and says so', async () => {
    const queue = new WriteQueue(() => Promise.reject(new Error('down')), { retryMinMs: 10, retryMaxMs: 20 });
    queue.enqueueCheck(check(1));
    await expect(queue.stop(200)).rejects.toThrow('down');
    queue.enqueueCheck(check(2)); // after stop: ignored, not buffered
    expect(queue.health().buffered).toBe(0);
  });

  it('gives up a drain after its deadline when a write never answers', async () => {
    const queue = new WriteQueue(() => new Promise<void>(() => {}));
    queue.enqueueCheck(check(1));
    await expect(queue.drain(200)).rejects.toThrow('did not finish within 200 ms');
    // And again while that write still hangs.
    await expect(queue.drain(100)).rejects.toThrow('did not finish within 100 ms');
  });
});

it('loses nothing on a graceful stop: every queued check, counter and look-up is in the file', async () => {
  const path = join(dir, 'graceful.db');
  const config = { database: { kind: 'sqlite' as const, path }, checkRetentionDays: 30 };
  const store = await openStore(config);
  const ids: string[] = [];
  for (let i = 0; i < 5_000; i++) {
    const id = randomUUID();
    ids.push(id);
    store.recordCheck({ ...check(i, id), checkedAt: Date.now() });
    store.count({ totalChecks: 1 });
    store.recordLookup(id, `client-${i % 3}`);
  }
  expect(store.health().buffered).toBeGreaterThan(0); // still queued when close begins
  await store.close();

  const db = sqliteBinding().open(path, { readonly: true });
  try {
    expect(db.prepare('SELECT count(*) AS n FROM checks').all()[0]).toEqual({ n: 5_000 });
    expect(db.prepare('SELECT count(*) AS n FROM lookups').all()[0]).toEqual({ n: 5_000 });
    expect(db.prepare("SELECT value FROM counters WHERE name = 'totalChecks'").all()[0]).toEqual({ value: 5_000 });
    expect(db.prepare('SELECT sum(clients_24h) AS n FROM servers').all()[0]).toEqual({ n: 5_000 });
  } finally {
    db.close();
  }
});
