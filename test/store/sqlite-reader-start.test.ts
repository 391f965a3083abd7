/**
 * The SQLite reader's connection opens with the first read somebody asks for, which the writer
 * answers meanwhile: opening the store, writing to it and the watches' background reads use
 * the writer's connection only.
 */
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it, vi } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { FakeClock } from '../support/clock.js';
import { sampleCheck } from './sample-check.js';

const dir = mkdtempSync(join(tmpdir(), 'observer-reader-start-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** This process's open descriptors of the database file, its log and its shared memory. */
function openOn(path: string): number {
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith(path)) count += 1;
    } catch {
      // closed meanwhile
    }
  }
  return count;
}

it('opens no second connection until a read somebody asked for, then one', async () => {
  const path = join(dir, 'observer.db');
  const now = Date.parse('2026-06-01T12:00:00.000Z');
  const store = await openStore({ database: { kind: 'sqlite', path }, checkRetentionDays: 2, rollupRetentionDays: 30 }, new FakeClock(now));
  try {
    const writerOnly = openOn(path);
    expect(writerOnly).toBeGreaterThan(0);

    store.recordCheck({ ...sampleCheck(0), checkedAt: now });
    await store.flush();
    expect(await store.watches.dueEvents(now, 10)).toEqual([]);
    expect(await store.watches.claimDue(now, 10, now + 60_000)).toEqual([]);
    expect(openOn(path)).toBe(writerOnly);

    expect((await store.trends(10, null)).data).toHaveLength(1);
    await vi.waitFor(() => expect(openOn(path)).toBeGreaterThan(writerOnly), { timeout: 10_000 });
    expect((await store.history(sampleCheck(0).serverId, '24h'))?.checks).toBe(1);
  } finally {
    await store.close();
  }
  expect(openOn(path)).toBe(0);
});
