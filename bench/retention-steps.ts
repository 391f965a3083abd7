/**
 * The longest retention step on SQLite under a backlog: what the writer is held for at a time
 * while a pass removes rows past retention (right after the upgrade, or after
 * CHECK_RETENTION_DAYS is lowered). Two lists: 1,000 servers with 30 days of raw checks every
 * 5 minutes (28 days of them past the default 2-day retention), and 100,000 servers with a
 * backlog of BACKLOG_HOURS hours each past retention (30 days of 100,000 servers' raw checks
 * are 864 million rows: more than a bench machine builds; a step's cost depends on the rows it
 * removes and the servers it walks, which this list has at full count; it is built with an hour
 * of checks kept per server, not two days). Each step is timed on
 * the main thread, request to answer, the way a group commit waiting for the writer sees it, and
 * in the writer's thread, the time the step held the connection (its commit included).
 *
 * Target: every step under 20 ms. Run: npx tsx bench/retention-steps.ts (BENCH_RETENTION=1000,100000).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { systemClock } from '../src/core/clock.js';
import { KyselyHistoryStore } from '../src/store/history-store.js';
import { retentionCutoffs } from '../src/store/maintenance.js';
import { sqliteBinding } from '../src/store/sqlite/binding.js';
import { openSqliteParts } from '../src/store/sqlite/parts.js';
import type { PruneStepResult } from '../src/store/sqlite/protocol.js';
import { fmt, summarise } from './support.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const INTERVAL = 5 * MINUTE;
/** The store's step budget (sqlite/maintenance.ts). */
const STEP_MS = 10;
const BACKLOG_HOURS = Number(process.env.BACKLOG_HOURS ?? 6);

const series = (count: number) => `(WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < ${count - 1}) SELECT n FROM k) AS k`;

/** Servers 1..servers, each with raw checks every 5 minutes over [from, until) and hourly rows over the same span. */
function build(path: string, servers: number, from: number, until: number): number {
  const db = sqliteBinding().open(path);
  try {
    db.pragma('busy_timeout = 10000');
    db.exec(`INSERT INTO servers (sid, id, edition, host, port, first_seen, last_seen, last_online)
      SELECT k.n + 1, 'srv-' || (k.n + 1), 'java', 'srv-' || (k.n + 1) || '.scale.example', 25565, ${from}, ${Date.now()}, 1 FROM ${series(servers)}`);
    const checks = Math.ceil((until - from) / INTERVAL);
    const hours = Math.ceil((until - from) / HOUR);
    const chunk = Math.max(1, Math.floor(2_000_000 / checks));
    for (let first = 1; first <= servers; first += chunk) {
      db.transaction(() => {
        db.exec(`INSERT INTO checks (server, checked_at, online, players_online, players_max, latency_ms)
          SELECT s.sid, ${from} + k.n * ${INTERVAL} + s.sid % ${INTERVAL}, 1, 3, 10, 20
          FROM servers s CROSS JOIN ${series(checks)} WHERE s.sid >= ${first} AND s.sid < ${first + chunk} ORDER BY s.sid, k.n`);
        db.exec(`INSERT INTO check_hours (server, hour, checks, online, players_n, players_sum, players_peak)
          SELECT s.sid, ${Math.floor(from / HOUR)} + k.n, 12, 12, 12, 36, 3
          FROM servers s CROSS JOIN ${series(hours)} WHERE s.sid >= ${first} AND s.sid < ${first + chunk} ORDER BY s.sid, k.n`);
      })();
    }
    return servers * checks;
  } finally {
    db.close();
  }
}

async function measure(servers: number, from: number, label: string, until = Date.now()): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'observer-retention-steps-'));
  try {
    const path = join(dir, 'observer.db');
    const parts = await openSqliteParts(path, {}, () => {});
    const retention = { checkDays: 2, rollupDays: 30 };
    const store = new KyselyHistoryStore({ ...parts, retention }, systemClock);
    try {
      await store.migrate();
      const now = Date.now();
      const built = performance.now();
      const checks = build(path, servers, from, Math.min(until, now));
      console.log(`${label}: ${fmt(checks)} raw checks built in ${fmt((performance.now() - built) / 1000, 1)} s`);
      const cutoffs = retentionCutoffs(retention, now);
      const times: number[] = [];
      const held: number[] = [];
      let removed = 0;
      let most = 0;
      let afterSid: number | null = 0;
      const pass = performance.now();
      while (afterSid !== null) {
        const started = performance.now();
        const result = (await parts.threads.writer.request({ op: 'prune', step: { afterSid, ...cutoffs, budgetMs: STEP_MS } })) as PruneStepResult;
        times.push(performance.now() - started);
        held.push(result.ms);
        removed += result.checks + result.hours;
        most = Math.max(most, result.mostPerStatement);
        afterSid = result.lastSid;
      }
      const passMs = performance.now() - pass;
      const summary = (values: number[]) => {
        values.sort((a, b) => a - b);
        const p = (q: number) => values[Math.min(values.length - 1, Math.floor(q * values.length))]!;
        const over = values.filter((ms) => ms >= 20).length;
        return `p50 ${fmt(p(0.5), 1)} ms, p99 ${fmt(p(0.99), 1)} ms, longest ${fmt(values.at(-1)!, 1)} ms, ${fmt(over)} at 20 ms or more`;
      };
      console.log(`  ${fmt(times.length)} steps removed ${fmt(removed)} rows in ${fmt(passMs / 1000, 1)} s; most rows in one DELETE ${fmt(most)}`);
      const heldLine = summary(held);
      console.log(`  writer held per step (in its thread, commit included): ${heldLine} (target < 20 ms)`);
      summarise(`retention steps, ${label}: writer held ${heldLine} (target < 20 ms)`);
      console.log(`  request to answer per step (main thread):               ${summary(times)}`);
    } finally {
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const wanted = (process.env.BENCH_RETENTION ?? '1000,100000').split(',');
if (wanted.includes('1000')) await measure(1_000, Date.now() - 30 * DAY, '1,000 servers × 30 days of raw checks, 28 days past retention');
if (wanted.includes('100000')) {
  const from = Date.now() - 2 * DAY - BACKLOG_HOURS * HOUR;
  await measure(100_000, from, `100,000 servers × ${BACKLOG_HOURS} h of raw checks past retention (and an hour kept)`, from + (BACKLOG_HOURS + 1) * HOUR);
}
