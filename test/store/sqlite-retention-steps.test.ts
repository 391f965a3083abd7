/**
 * Retention on SQLite under a 30-day backlog (what a database holds right after the upgrade,
 * or after CHECK_RETENTION_DAYS is lowered): each step the writer runs removes a bounded
 * number of rows, each DELETE a bounded number, whatever the backlog of one server, so no
 * step holds the writer for long; steps that end inside a server's range go on from there, and
 * the pass ends with exactly the rows retention keeps. Bounds are asserted on row counts, read
 * from the file between steps, not on time.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { HOUR_MS } from '../../src/store/check-row.js';
import { KyselyHistoryStore } from '../../src/store/history-store.js';
import { retentionCutoffs } from '../../src/store/maintenance.js';
import type { PruneStepResult } from '../../src/store/sqlite/protocol.js';
import { openSqliteParts } from '../../src/store/sqlite/parts.js';
import { ROWS_PER_STATEMENT, ROWS_PER_STEP } from '../../src/store/sqlite/retention.js';
import type { CheckRecord } from '../../src/store/types.js';

const dir = mkdtempSync(join(tmpdir(), 'observer-retention-steps-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const DAY_MS = 24 * HOUR_MS;
const SERVERS = 20;
/** Two of them were last checked 10 days ago: retention forgets them whole. */
const GONE = 2;
const CHECKS_PER_DAY = 96;

it('removes a 30-day backlog in steps of bounded rows and statements of bounded rows, keeping exactly what retention keeps', async () => {
  const parts = await openSqliteParts(join(dir, 'backlog.db'), {}, () => {});
  const retention = { checkDays: 1, rollupDays: 7 };
  const store = new KyselyHistoryStore({ ...parts, retention }, systemClock);
  try {
    await store.migrate();
    const now = Date.now();
    const checks: CheckRecord[] = [];
    for (let s = 0; s < SERVERS; s++) {
      const until = s < GONE ? now - 10 * DAY_MS : now;
      for (let at = now - 30 * DAY_MS; at < until; at += DAY_MS / CHECKS_PER_DAY) {
        checks.push({ serverId: `s${s}`, edition: 'java', host: `s${s}.example.com`, port: 25565, checkedAt: Math.round(at) + s, online: true, playersOnline: 1, playersMax: 10, latencyMs: 3 });
      }
    }
    for (let i = 0; i < checks.length; i += 5000) await parts.writer({ id: randomUUID(), settled: [], checks: checks.slice(i, i + 5000), lookups: [], counters: new Map(), expireBefore: null });

    const cutoffs = retentionCutoffs(retention, now);
    const count = async (table: 'checks' | 'check_hours') =>
      Number((await parts.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    const keptChecks = checks.filter((c) => !c.serverId.match(/^s[01]$/) && c.checkedAt >= cutoffs.checksBefore).length;
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
