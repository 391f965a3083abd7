/** ReadFallback: the deadline of /trends and /stats reads and the last good answer. */
import { describe, expect, it } from 'vitest';
import { InvalidCursorError, StoreUnavailableError } from '../../src/store/index.js';
import { ReadFallback } from '../../src/store/history/read-fallback.js';

const never = () => new Promise<{ n: number }>(() => {});

describe('ReadFallback', () => {
  it('answers 503 store_unavailable with Retry-After when a read misses its deadline and nothing was answered before', async () => {
    const reads = new ReadFallback({ deadlineMs: 20 });
    const error = await reads.read('a', never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error).toMatchObject({ code: 'store_unavailable', statusCode: 503, headers: { 'Retry-After': '5' } });
  });

  it('serves the last good answer to the same question, marked stale, on a failure or a missed deadline, and reports each failure', async () => {
    let now = 0;
    const failures: string[] = [];
    const reads = new ReadFallback({ deadlineMs: 20, pauseMs: 1000, now: () => now, onFailure: (error) => failures.push((error as Error).message) });
    expect(await reads.read('a', async () => ({ n: 1 }))).toEqual({ n: 1 });
    expect(await reads.read('a', never)).toEqual({ n: 1, stale: true });
    // Paused after a failure: the fallback at once, without calling the database.
    let called = false;
    const paused = await reads.read('a', async () => {
      called = true;
      return { n: 2 };
    });
    expect(paused).toEqual({ n: 1, stale: true });
    expect(called).toBe(false);
    await expect(reads.read('b', async () => ({ n: 3 }))).rejects.toBeInstanceOf(StoreUnavailableError);
    now += 1000;
    await expect(reads.read('a', () => Promise.reject(new Error('ECONNREFUSED')))).resolves.toEqual({ n: 1, stale: true });
    now += 1000;
    expect(await reads.read('a', async () => ({ n: 4 }))).toEqual({ n: 4 });
    // The missed deadline and the refused connection; not the reads answered while paused.
    expect(failures).toEqual(['history read took longer than 20 ms', 'ECONNREFUSED']);
  });

  it('keeps at most one answer per keepEveryMs: under a flood of distinct questions, a sample of them', async () => {
    let now = 0;
    const reads = new ReadFallback({ deadlineMs: 20, pauseMs: 0, keepEveryMs: 10, now: () => now });
    expect(await reads.read('a', async () => ({ n: 1 }))).toEqual({ n: 1 });
    now += 5;
    // Answered, but within 10 ms of the last kept answer: not kept.
    expect(await reads.read('b', async () => ({ n: 2 }))).toEqual({ n: 2 });
    expect(await reads.read('a', async () => ({ n: 3 }))).toEqual({ n: 3 });
    await expect(reads.read('b', never)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await reads.read('a', never)).toEqual({ n: 1, stale: true });
    now += 10;
    expect(await reads.read('b', async () => ({ n: 4 }))).toEqual({ n: 4 });
    expect(await reads.read('b', never)).toEqual({ n: 4, stale: true });
  });

  it('passes a client error through: an unknown cursor is an answer, not an outage', async () => {
    const reads = new ReadFallback({ deadlineMs: 1000 });
    await reads.read('a', async () => ({ n: 1 }));
    await expect(reads.read('a', () => Promise.reject(new InvalidCursorError()))).rejects.toBeInstanceOf(InvalidCursorError);
    expect(await reads.read('a', async () => ({ n: 5 }))).toEqual({ n: 5 });
  });
});
