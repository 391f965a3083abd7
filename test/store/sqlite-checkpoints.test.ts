/**
 * The SQLite writer's checkpoints (writer-work.ts): requests of their own between group
 * commits, never more than MOST_WRITES_PER_CHECKPOINT writes apart, so the write-ahead log stays
 * as small as a few writes. A copy that holds a read transaction open (as `VACUUM INTO` does)
 * blocks no group commit; the log grows while it reads and goes into the file once it is done.
 * Bounds are asserted on frames and bytes, never on time.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { KyselyHistoryStore } from '../../src/store/history/history-store.js';
import { sqliteBinding } from '../../src/store/sqlite/binding.js';
import { openSqliteParts } from '../../src/store/sqlite/parts.js';
import type { CheckpointResult } from '../../src/store/sqlite/protocol.js';
import { CHECKPOINT_FRAMES, MOST_WRITES_PER_CHECKPOINT, type WriterWork } from '../../src/store/sqlite/writer-work.js';
import type { CheckRecord } from '../../src/store/types.js';

const dir = mkdtempSync(join(tmpdir(), 'observer-checkpoints-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** One WAL frame: a 4 KiB page and its 24-byte header; the file starts with a 32-byte header. */
const walBytes = (frames: number) => 32 + frames * (4096 + 24);

it('checkpoints between group commits, keeps the log small, and copies in after a reader that held it', async () => {
  const path = join(dir, 'checkpoints.db');
  const works: WriterWork[] = [];
  const parts = await openSqliteParts(path, { onWriterWork: (work) => works.push(work) }, () => {});
  const store = new KyselyHistoryStore({ ...parts, retention: { checkDays: 2, rollupDays: 30 } }, systemClock);
  const wal = () => statSync(`${path}-wal`).size;
  let at = Date.now() - 3_600_000;
  const batch = (servers: number) => {
    const checks: CheckRecord[] = [];
    for (let s = 0; s < servers; s++) {
      checks.push({ serverId: `s${s}`, edition: 'java', host: `s${s}.example.com`, port: 25565, checkedAt: (at += 1), online: true, playersOnline: 1, playersMax: 10, latencyMs: 3 });
    }
    return parts.writer({ id: randomUUID(), settled: [], checks, lookups: [], counters: new Map(), expireBefore: null });
  };
  try {
    await store.migrate();
    works.length = 0;
    let largest = 0;
    for (let i = 0; i < 200; i++) {
      await batch(200);
      largest = Math.max(largest, wal());
    }
    let since = 0;
    for (const work of works) {
      since = work.kind === 'checkpoint' ? 0 : since + 1;
      expect(since).toBeLessThanOrEqual(MOST_WRITES_PER_CHECKPOINT);
    }
    const checkpoints = works.filter((w) => w.kind === 'checkpoint').map((w) => w.checkpoint!);
    expect(checkpoints.length).toBeGreaterThanOrEqual(200 / MOST_WRITES_PER_CHECKPOINT);
    // The writes since the last of them, checkpointed too.
    checkpoints.push((await parts.threads.writer.request({ op: 'checkpoint' })) as CheckpointResult);
    for (const { frames, copied } of checkpoints) expect(copied).toBe(frames);
    // Each checkpoint copied the whole log, so it started over: the file never held more than the
    // frames one checkpoint found.
    const mostFrames = Math.max(...checkpoints.map((c) => c.frames));
    expect(largest).toBeLessThanOrEqual(walBytes(mostFrames));
    // Commits of a few dozen pages each: the interval between checkpoints follows CHECKPOINT_FRAMES.
    expect(mostFrames).toBeLessThanOrEqual(2 * CHECKPOINT_FRAMES);
    // Two hundred commits wrote more than the log ever held at once.
    const written = checkpoints.reduce((sum, c) => sum + c.frames, 0);
    expect(written).toBeGreaterThan(mostFrames * 4);

    // A second connection reads one snapshot for as long as a copy takes.
    const copy = sqliteBinding().open(path, { readonly: true });
    try {
      copy.exec('BEGIN');
      expect(copy.prepare('SELECT count(*) AS n FROM checks').get()).toEqual(expect.objectContaining({ n: 40_000 }));
      works.length = 0;
      for (let i = 0; i < 3 * MOST_WRITES_PER_CHECKPOINT; i++) await batch(200);
      const during = works.filter((w) => w.kind === 'checkpoint').map((w) => w.checkpoint!);
      expect(during.length).toBeGreaterThan(0);
      // The log keeps what the snapshot may still need.
      expect(during.at(-1)!.copied).toBeLessThan(during.at(-1)!.frames);
      expect(copy.prepare('SELECT count(*) AS n FROM checks').get()).toEqual(expect.objectContaining({ n: 40_000 }));
      copy.exec('COMMIT');
    } finally {
      copy.close();
    }
    works.length = 0;
    await batch(200);
    for (let i = 0; i < MOST_WRITES_PER_CHECKPOINT && !works.some((w) => w.kind === 'checkpoint'); i++) await batch(200);
    const after = works.find((w) => w.kind === 'checkpoint')!.checkpoint!;
    expect(after.copied).toBe(after.frames);
  } finally {
    await store.close();
  }
}, 120_000);
