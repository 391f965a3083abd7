/**
 * What /trends keeps in memory is bounded whatever clients ask, at the size of a large server
 * list: 100,000 ranked servers, thousands of first pages of every limit while the ranking
 * changes under them (every change a new snapshot), and thousands of cursors followed,
 * remembered or unknown. The heap after a full collection grows by a few MiB, where keeping
 * a copy of the whole ranking per snapshot would hold over a hundred.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { performance } from 'node:perf_hooks';
import { afterAll, expect, it } from 'vitest';
import { openStore, type HistoryStore } from '../../src/store/index.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const dir = mkdtempSync(join(tmpdir(), 'observer-trends-memory-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SERVERS = 100_000;
const ROUNDS = 1_000;
const MIB = 1024 * 1024;

function heapAfterCollection(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/**
 * Writes what the store has queued, however long a busy machine takes: this test is about
 * memory, and flush() gives up waiting after 5 s (the writes go on meanwhile).
 */
async function flushed(store: HistoryStore): Promise<void> {
  const until = Date.now() + 120_000;
  for (;;) {
    try {
      return await store.flush();
    } catch (error) {
      if (!String(error).includes('did not finish') || Date.now() > until) throw error;
    }
  }
}

it('keeps a bounded amount in memory for 100,000 ranked servers, whatever pages and cursors are asked for', async () => {
  // The read deadline out of the way: this is about memory, on a machine that may be busy.
  const store = await openStore({ database: { kind: 'sqlite', path: join(dir, 'observer.db') }, checkRetentionDays: 2 }, undefined, { readDeadlineMs: 60_000 });
  try {
    const ids: string[] = [];
    const now = Date.now();
    for (let i = 0; i < SERVERS; i++) {
      const id = randomUUID();
      ids.push(id);
      store.recordCheck({ serverId: id, edition: 'java', host: `s${i}.example.com`, port: 25565, checkedAt: now, online: true, playersOnline: i % 5000, playersMax: 10_000, latencyMs: 5 });
      if (i % 2000 === 0) await flushed(store);
    }
    await flushed(store);
    expect((await store.trends(50, null)).hasNext).toBe(true);
    const before = heapAfterCollection();

    const started = performance.now();
    for (let round = 0; round < ROUNDS; round++) {
      // The ranking changes between first pages: each one needs a snapshot of its own.
      store.recordLookup(ids[(round * 7919) % SERVERS]!, `client-${round}`);
      const limit = 1 + (round % 50);
      let page = await store.trends(limit, null);
      for (let step = 0; step < round % 4 && page.nextCursor; step++) page = await store.trends(limit, page.nextCursor);
      // A cursor the store never issued: placed by its server's current score.
      await store.trends(limit, ids[(round * 104_729) % SERVERS]!);
    }
    const growth = heapAfterCollection() - before;
    console.log(`heap growth after ${ROUNDS} first pages, their next pages and ${ROUNDS} unknown cursors (${((performance.now() - started) / 1000).toFixed(1)} s): ${(growth / MIB).toFixed(1)} MiB`);
    expect(growth).toBeLessThan(24 * MIB);
  } finally {
    await store.close();
  }
}, 300_000);
