/**
 * The longest retention step on SQLite under a 30-day backlog: what the writer is held for at a
 * time while a pass removes rows past retention (right after the upgrade, or after
 * CHECK_RETENTION_DAYS is lowered). Two lists, both 30 days deep with the default retention (2
 * days of raw checks, 30 of hourly rows), so 28 days of raw checks are past it:
 *  - 1,000 servers, a check every 5 minutes (8.6 million raw checks, an hourly row per hour);
 *  - 100,000 servers, a check every RETENTION_100K_EVERY_H hours (default 6: 12 million raw
 *    checks and as many hourly rows). Every check every 5 minutes would be 864 million rows,
 *    more than a bench machine builds in minutes; a step's cost depends on the rows it removes
 *    and the servers it walks, and here every one of the 100,000 servers has expired rows
 *    spread over 28 days.
 * The pass runs as the store runs it (sqlite/maintenance.ts): retention steps, checkpoints
 * between them as requests of their own, then vacuum steps. Each unit of work is timed on the
 * main thread, request to answer, the way a group commit waiting for the writer sees it; a
 * retention step also in the writer's thread, the time it held the connection (its commit
 * included). Prints, per step, the rows removed, and the write-ahead log's frames per
 * checkpoint and its largest size on disk.
 *
 * Target: every step under 20 ms. Run: npx tsx bench/retention-steps.ts (BENCH_RETENTION=1000,100000).
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { systemClock } from '../src/core/clock.js';
import { KyselyHistoryStore } from '../src/store/history/history-store.js';
import { retentionCutoffs } from '../src/store/maintenance.js';
import { sqliteBinding } from '../src/store/sqlite/binding.js';
import { openSqliteParts } from '../src/store/sqlite/parts.js';
import type { WriterWork } from '../src/store/sqlite/writer-work.js';
import { fmt, summarise } from './support.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const EVERY_100K_H = Number(process.env.RETENTION_100K_EVERY_H ?? 6);

const series = (count: number) => `(WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < ${count - 1}) SELECT n FROM k) AS k`;

/**
 * Servers 1..servers, each with a raw check every `interval` ms over [from, until), and an
 * hourly row for each hour that has checks.
 */
function build(path: string, servers: number, from: number, until: number, interval: number): number {
  const db = sqliteBinding().open(path);
  try {
    db.pragma('busy_timeout = 10000');
    db.exec(`INSERT INTO servers (sid, id, edition, host, port, first_seen, last_seen, last_online)
      SELECT k.n + 1, 'srv-' || (k.n + 1), 'java', 'srv-' || (k.n + 1) || '.scale.example', 25565, ${from}, ${Date.now()}, 1 FROM ${series(servers)}`);
    const checks = Math.ceil((until - from) / interval);
    const hourStep = Math.max(HOUR, interval);
    const hours = Math.ceil((until - from) / hourStep);
    const chunk = Math.max(1, Math.floor(2_000_000 / checks));
    const perHour = Math.max(1, Math.round(HOUR / interval));
    for (let first = 1; first <= servers; first += chunk) {
      db.transaction(() => {
        db.exec(`INSERT INTO checks (server, checked_at, online, players_online, players_max, latency_ms)
          SELECT s.sid, ${from} + k.n * ${interval} + s.sid % ${Math.min(interval, HOUR)}, 1, 3, 10, 20
          FROM servers s CROSS JOIN ${series(checks)} WHERE s.sid >= ${first} AND s.sid < ${first + chunk} ORDER BY s.sid, k.n`);
        db.exec(`INSERT INTO check_hours (server, hour, checks, online, players_n, players_sum, players_peak)
          SELECT s.sid, ${Math.floor(from / HOUR)} + k.n * ${hourStep / HOUR}, ${perHour}, ${perHour}, ${perHour}, ${3 * perHour}, 3
          FROM servers s CROSS JOIN ${series(hours)} WHERE s.sid >= ${first} AND s.sid < ${first + chunk} ORDER BY s.sid, k.n`);
      })();
    }
    // The pass starts with an empty log: its largest size is the pass's own.
    db.pragma('wal_checkpoint(TRUNCATE)');
    return servers * checks;
  } finally {
    db.close();
  }
}

function summary(values: number[]): string {
  if (values.length === 0) return 'none';
  values.sort((a, b) => a - b);
  const p = (q: number) => values[Math.min(values.length - 1, Math.floor(q * values.length))]!;
  const over = values.filter((ms) => ms >= 20).length;
  return `p50 ${fmt(p(0.5), 1)} ms, p99 ${fmt(p(0.99), 1)} ms, longest ${fmt(values.at(-1)!, 1)} ms, ${fmt(over)} at 20 ms or more`;
}

async function measure(servers: number, interval: number, label: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'observer-retention-steps-'));
  try {
    const path = join(dir, 'observer.db');
    const works: WriterWork[] = [];
    let walMost = 0;
    const parts = await openSqliteParts(
      path,
      {
        onWriterWork: (work) => {
          works.push(work);
          if (work.kind === 'checkpoint') walMost = Math.max(walMost, statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0);
        },
      },
      () => {},
    );
    const retention = { checkDays: 2, rollupDays: 30 };
    const store = new KyselyHistoryStore({ ...parts, retention }, systemClock);
    try {
      await store.migrate();
      const now = Date.now();
      const built = performance.now();
      const checks = build(path, servers, now - 30 * DAY, now, interval);
      console.log(`${label}: ${fmt(checks)} raw checks built in ${fmt((performance.now() - built) / 1000, 1)} s, file ${fmt(statSync(path).size / 2 ** 20)} MiB`);
      const pass = performance.now();
      const removed = await parts.maintenance.run(retentionCutoffs(retention, now), now, new AbortController().signal);
      const passMs = performance.now() - pass;
      const of = (kind: WriterWork['kind']) => works.filter((work) => work.kind === kind);
      const steps = of('retention_step').map((work) => work.step!);
      const rows = steps.map((step) => step.checks + step.hours);
      const checkpoints = of('checkpoint');
      const frames = checkpoints.map((work) => work.checkpoint!.frames);
      console.log(
        `  ${fmt(steps.length)} retention steps removed ${fmt(removed.checks! + removed.hours!)} rows in ${fmt(passMs / 1000, 1)} s (the pass, vacuum included); ` +
          `rows per step: mean ${fmt(rows.reduce((a, b) => a + b, 0) / steps.length)}, most ${fmt(Math.max(...rows))}; most rows in one DELETE ${fmt(Math.max(...steps.map((step) => step.mostPerStatement)))}`,
      );
      const heldLine = summary(steps.map((step) => step.ms));
      console.log(`  retention step, writer held (in its thread, commit included): ${heldLine} (target < 20 ms)`);
      summarise(`retention steps, ${label}: writer held ${heldLine} (target < 20 ms)`);
      console.log(`  retention step, request to answer (main thread):             ${summary(of('retention_step').map((work) => work.ms))}`);
      console.log(`  vacuum step (${fmt(of('vacuum_step').length)}, ${fmt(removed.pages!)} pages given back), request to answer:  ${summary(of('vacuum_step').map((work) => work.ms))}`);
      console.log(`  checkpoint (${fmt(checkpoints.length)}), request to answer: ${summary(checkpoints.map((work) => work.ms))}`);
      console.log(`  write-ahead log: at most ${fmt(Math.max(0, ...frames))} frames (4 KiB) at a checkpoint, largest -wal file ${fmt(walMost / 2 ** 20, 1)} MiB`);
    } finally {
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const wanted = (process.env.BENCH_RETENTION ?? '1000,100000').split(',');
if (wanted.includes('1000')) await measure(1_000, 5 * MINUTE, '1,000 servers × 30 days, a check every 5 minutes, 28 days past retention');
if (wanted.includes('100000')) {
  await measure(100_000, EVERY_100K_H * HOUR, `100,000 servers × 30 days, a check every ${EVERY_100K_H} h, 28 days past retention`);
}
