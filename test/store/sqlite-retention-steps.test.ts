/**
 * Retention on SQLite under a 30-day backlog (what a database holds right after the upgrade,
 * or after CHECK_RETENTION_DAYS is lowered): each step the writer runs removes a bounded
 * number of rows, each DELETE a bounded number, whatever the backlog of one server, so no
 * step holds the writer for long; steps that end inside a server's range go on from there, and
 * the pass ends with exactly the rows retention keeps. Bounds are asserted on row counts, read
 * from the file between steps, not on time.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { HOUR_MS } from '../../src/store/history/check-row.js';
import { KyselyHistoryStore } from '../../src/store/history/history-store.js';
import { retentionCutoffs } from '../../src/store/maintenance.js';
import type { PruneStepResult } from '../../src/store/sqlite/protocol.js';
import { openSqliteParts } from '../../src/store/sqlite/parts.js';
import { ROWS_PER_STATEMENT, ROWS_PER_STEP } from '../../src/store/sqlite/retention.js';
import { MOST_WRITES_PER_CHECKPOINT, type WriterWork } from '../../src/store/sqlite/writer-work.js';
import type { CheckRecord } from '../../src/store/types.js';

const dir = mkdtempSync(join(tmpdir(), 'observer-retention-steps-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const DAY_MS = 24 * HOUR_MS;
const SERVERS = 20;
/** Two of them were last checked 10 days ago: retention forgets them whole. */
const GONE = 2;
const CHECKS_PER_DAY = 96;

/** SERVERS servers' checks over 30 days up to `now`, every 15 minutes; the first GONE of them stopped 10 days ago. */
function backlog(now: number): CheckRecord[] {
  const checks: CheckRecord[] = [];
  for (let s = 0; s < SERVERS; s++) {
    const until = s < GONE ? now - 10 * DAY_MS : now;
    for (let at = now - 30 * DAY_MS; at < until; at += DAY_MS / CHECKS_PER_DAY) {
      checks.push({ serverId: `s${s}`, edition: 'java', host: `s${s}.example.com`, port: 25565, checkedAt: Math.round(at) + s, online: true, playersOnline: 1, playersMax: 10, latencyMs: 3 });
    }
  }
  return checks;
}

const RETENTION = { checkDays: 1, rollupDays: 7 };

/** A migrated store on `parts` holding the backlog; the checks written, the time they end at, and retention's cutoffs then. */
async function storeWithBacklog(parts: Awaited<ReturnType<typeof openSqliteParts>>) {
  const store = new KyselyHistoryStore({ ...parts, retention: RETENTION }, systemClock);
  await store.migrate();
  const now = Date.now();
  const checks = backlog(now);
  for (let i = 0; i < checks.length; i += 5000) await parts.writer({ id: randomUUID(), settled: [], checks: checks.slice(i, i + 5000), lookups: [], counters: new Map(), expireBefore: null });
  const cutoffs = retentionCutoffs(RETENTION, now);
  const kept = checks.filter((c) => !c.serverId.match(/^s[01]$/) && c.checkedAt >= cutoffs.checksBefore).length;
  return { store, now, checks, cutoffs, kept };
}

it('removes a 30-day backlog in steps of bounded rows and statements of bounded rows, keeping exactly what retention keeps', async () => {
  const parts = await openSqliteParts(join(dir, 'backlog.db'), {}, () => {});
  const { store, checks, cutoffs, kept: keptChecks } = await storeWithBacklog(parts);
  try {
    const count = async (table: 'checks' | 'check_hours') =>
      Number((await parts.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    const keptHours = Number(
      (
        await parts.db
          .selectFrom('check_hours')
          .innerJoin('servers', 'servers.sid', 'check_hours.server')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('check_hours.hour', '>=', cutoffs.hoursBefore)
          .where('servers.last_seen', '>=', cutoffs.serversBefore)
          .executeTakeFirstOrThrow()
      ).n,
    );
    const before = (await count('checks')) + (await count('check_hours'));
    // One server's backlog alone is more than a step removes.
    expect((checks.length / SERVERS) * (29 / 30)).toBeGreaterThan(ROWS_PER_STEP);

    let afterSid: number | null = 0;
    let left = before;
    let steps = 0;
    while (afterSid !== null) {
      // A generous time budget: the row bounds, not the clock, end these steps.
      const result = (await parts.threads.writer.request({ op: 'prune', step: { afterSid, ...cutoffs, budgetMs: 60_000 } })) as PruneStepResult;
      const now = (await count('checks')) + (await count('check_hours'));
      expect(left - now).toBe(result.checks + result.hours);
      expect(left - now).toBeLessThanOrEqual(ROWS_PER_STEP);
      expect(result.mostPerStatement).toBeLessThanOrEqual(ROWS_PER_STATEMENT);
      left = now;
      afterSid = result.lastSid;
      steps += 1;
    }
    expect(steps).toBeGreaterThanOrEqual(Math.ceil((before - keptChecks - keptHours) / ROWS_PER_STEP));
    expect(await count('checks')).toBe(keptChecks);
    expect(await count('check_hours')).toBe(keptHours);
    const servers = await parts.db.selectFrom('servers').select('id').orderBy('sid').execute();
    expect(servers.map((row) => row.id)).toEqual(Array.from({ length: SERVERS - GONE }, (_, i) => `s${i + GONE}`));
    // A pass over what is left removes nothing more.
    const again = (await parts.threads.writer.request({ op: 'prune', step: { afterSid: 0, ...cutoffs, budgetMs: 60_000 } })) as PruneStepResult;
    expect(again.checks + again.hours + again.servers).toBe(0);
  } finally {
    await store.close();
  }
}, 120_000);

it('runs a pass as bounded steps with checkpoints of their own between them; a pass stopped between steps leaves the rest to the next, which drains it', async () => {
  const path = join(dir, 'passes.db');
  const works: WriterWork[] = [];
  /** The -wal file's size when each checkpoint was answered. */
  const walSizes: number[] = [];
  const stopFirst = new AbortController();
  const parts = await openSqliteParts(
    path,
    {
      onWriterWork: (work) => {
        works.push(work);
        if (work.kind === 'checkpoint') walSizes.push(statSync(`${path}-wal`).size);
        // The first pass is stopped (as close() stops it) after a few steps.
        if (works.filter((w) => w.kind === 'retention_step').length === 5) stopFirst.abort();
      },
    },
    () => {},
  );
  const { store, now, checks, cutoffs, kept } = await storeWithBacklog(parts);
  try {
    const rawChecks = async () => Number((await parts.db.selectFrom('checks').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    works.length = 0;

    const first = await parts.maintenance.run(cutoffs, now, stopFirst.signal);
    const steps = () => works.filter((w) => w.kind === 'retention_step').map((w) => w.step!);
    expect(steps()).toHaveLength(5);
    expect(first.checks).toBe(steps().reduce((sum, step) => sum + step.checks, 0));
    expect(await rawChecks()).toBe(checks.length - first.checks!);
    expect(await rawChecks()).toBeGreaterThan(kept);

    const second = await parts.maintenance.run(cutoffs, now, new AbortController().signal);
    expect(await rawChecks()).toBe(kept);
    expect(first.checks! + second.checks!).toBe(checks.length - kept);
    expect(first.servers! + second.servers!).toBe(GONE);
    for (const step of steps()) {
      expect(step.checks + step.hours).toBeLessThanOrEqual(ROWS_PER_STEP);
      expect(step.mostPerStatement).toBeLessThanOrEqual(ROWS_PER_STATEMENT);
    }

    // No more than MOST_WRITES_PER_CHECKPOINT steps between two checkpoints, and a checkpoint ends the pass.
    let since = 0;
    for (const work of works) {
      since = work.kind === 'checkpoint' ? 0 : since + 1;
      expect(since).toBeLessThanOrEqual(MOST_WRITES_PER_CHECKPOINT);
    }
    expect(works.at(-1)!.kind).toBe('checkpoint');
    const checkpoints = works.filter((w) => w.kind === 'checkpoint').map((w) => w.checkpoint!);
    expect(checkpoints.length).toBeGreaterThanOrEqual(Math.floor(steps().length / MOST_WRITES_PER_CHECKPOINT));
    // Nothing else reads the file: each copies the whole log, which so starts over and holds at
    // most the frames (4 KiB pages and a 24-byte header each) of the writes between two checkpoints.
    for (const { frames, copied } of checkpoints) expect(copied).toBe(frames);
    const mostFrames = Math.max(...checkpoints.map((c) => c.frames));
    for (const size of walSizes) expect(size).toBeLessThanOrEqual(32 + mostFrames * (4096 + 24));
  } finally {
    await store.close();
  }
}, 120_000);
