/**
 * The SQLite file after retention: the pages a pass frees go back to the file system while the
 * service runs, not only once the write-ahead log has grown to its checkpoint size.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { openStore, type CheckRecord } from '../../src/store/index.js';
import { FakeClock } from '../support/clock.js';
import { sampleCheck } from './sample-check.js';

const DAY = 24 * 60 * 60 * 1000;
const dir = mkdtempSync(join(tmpdir(), 'observer-file-size-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function check(serverId: string, checkedAt: number): CheckRecord {
  return { ...sampleCheck(0), serverId, checkedAt };
}

it('shrinks the database file in the retention pass that forgets most servers, with the store still open', async () => {
  const path = join(dir, 'observer.db');
  const config = { database: { kind: 'sqlite', path }, checkRetentionDays: 2, rollupRetentionDays: 30 } as const;
  const now = Date.parse('2026-06-01T12:00:00.000Z');
  // 6,000 servers checked 40 days ago, past both retentions; closing copies the log into the file.
  const ids = Array.from({ length: 6000 }, () => randomUUID());
  const early = await openStore(config, new FakeClock(now - 40 * DAY));
  for (const [i, id] of ids.entries()) {
    early.recordCheck(check(id, now - 40 * DAY + i));
    if (i % 500 === 499) await early.flush();
  }
  await early.close();
  const before = statSync(path).size;

  const store = await openStore(config, new FakeClock(now));
  try {
    for (const id of ids.slice(0, 50)) store.recordCheck(check(id, now));
    await store.flush();
    await store.prune();
    expect((await store.trends(100, null)).data).toHaveLength(50);
    expect(statSync(path).size).toBeLessThan(before / 2);
  } finally {
    await store.close();
  }
});
