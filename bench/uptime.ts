/**
 * Uptime history benchmark (SQLite): `npx tsx bench/uptime.ts [servers]`.
 *
 * Loads one server checked every minute for 30 days (43,200 checks) among `servers` others
 * (default 2,000, 100 checks each over the same 30 days), then prints medians of
 * store.history() for 24 h, 7 d and 30 d and of GET /api/v1/history through app.inject, next
 * to a baseline in the same run: reading the range's raw rows and bucketing them in
 * JavaScript, which is what the grouped query avoids. Figures only.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../src/config/index.js';
import { buildApp } from '../src/http/app.js';
import { serverId } from '../src/status/server-id.js';
import { bucketWindow, openStore, type HistoryRange } from '../src/store/index.js';
import { sqliteBinding } from '../src/store/sqlite/binding.js';

const OTHERS = Number(process.argv[2] ?? 2_000);
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const NOW = Date.now();
const clock = { now: () => NOW };
const HOST = 'busy.example.com';
const ID = serverId('java', HOST, 25565);

async function median(label: string, runs: number, fn: () => unknown): Promise<number> {
  for (let i = 0; i < Math.min(10, runs); i++) await fn(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  const m = times[Math.floor(times.length / 2)]!;
  console.log(`  ${label.padEnd(48)} median ${m.toFixed(2).padStart(8)} ms   p95 ${times[Math.floor(times.length * 0.95)]!.toFixed(2).padStart(8)} ms`);
  return m;
}

const dir = mkdtempSync(join(tmpdir(), 'observer-bench-uptime-'));
const path = join(dir, 'observer.db');
try {
  const config = loadConfig({ DATABASE_URL: `sqlite:${path}`, RATE_LIMIT_GENERAL: '10000000' });
  await (await openStore(config, clock)).close(); // schema

  const raw = sqliteBinding().open(path);
  raw.pragma('journal_mode = WAL');
  const insertServer = raw.prepare(
    `INSERT INTO servers (id, edition, host, port, first_seen, last_seen, record_players, last_online,
       players_online, players_max, clients_24h, trend_score) VALUES (?,?,?,?,?,?,0,1,0,100,0,0)`,
  );
  const insertCheck = raw.prepare(
    'INSERT INTO checks (server_id, checked_at, online, players_online, players_max, latency_ms, version) VALUES (?,?,?,?,?,?,?)',
  );
  const start = performance.now();
  raw.transaction(() => {
    insertServer.run(ID, 'java', HOST, 25565, NOW - 30 * DAY, NOW);
    for (let t = NOW - 30 * DAY; t <= NOW; t += MINUTE) {
      const online = (t / MINUTE) % 50 === 0 ? 0 : 1;
      insertCheck.run(ID, t, online, online ? (t / MINUTE) % 97 : null, online ? 100 : null, online ? 25 : null, online ? '1.21.4' : null);
    }
    for (let s = 0; s < OTHERS; s++) {
      const id = randomUUID();
      insertServer.run(id, 'java', `mc${s}.example.com`, 25565, NOW - 30 * DAY, NOW);
      for (let c = 0; c < 100; c++) insertCheck.run(id, NOW - Math.floor(((c + 0.5) / 100) * 30 * DAY), 1, 5, 100, 30, '1.21.4');
    }
  })();
  raw.pragma('wal_checkpoint(TRUNCATE)');
  console.log(`Loaded ${(43_201 + OTHERS * 100).toLocaleString()} checks of ${(OTHERS + 1).toLocaleString()} servers in ${((performance.now() - start) / 1000).toFixed(1)} s`);

  const store = await openStore(config, clock);
  const app = await buildApp({ config, store, clock, logger: false });
  await app.ready();

  // Baseline: every check of the range read out, bucketed in JavaScript.
  const rows = raw.prepare('SELECT checked_at, online, players_online FROM checks WHERE server_id = ? AND checked_at >= ? AND checked_at < ?');
  function baseline(range: HistoryRange) {
    const w = bucketWindow(range, NOW);
    const buckets = Array.from({ length: w.count }, () => ({ checks: 0, online: 0, sum: 0, max: 0 }));
    for (const r of rows.iterate(ID, w.from, w.until) as Iterable<{ checked_at: number; online: number; players_online: number | null }>) {
      const b = buckets[Math.floor((r.checked_at - w.from) / w.bucketMs)]!;
      b.checks++;
      b.online += r.online;
      if (r.players_online !== null) {
        b.sum += r.players_online;
        b.max = Math.max(b.max, r.players_online);
      }
    }
    return buckets;
  }

  const summary: string[] = [];
  for (const range of ['24h', '7d', '30d'] as const) {
    console.log(`\n${range}`);
    const direct = await median(`store.history(${range})`, 100, () => store.history(ID, range));
    const http = await median(`GET /api/v1/history/{address}?range=${range}`, 100, () => app.inject(`/api/v1/history/${HOST}?range=${range}`));
    const base = await median('baseline: raw rows bucketed in JavaScript', 30, () => baseline(range));
    summary.push(`  ${range.padEnd(4)} store ${direct.toFixed(2)} ms, HTTP ${http.toFixed(2)} ms; baseline ${base.toFixed(2)} ms (${(base / direct).toFixed(1)}x)`);
  }
  console.log('\nSummary');
  for (const line of summary) console.log(line);
  await app.close();
  await store.close();
  raw.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
