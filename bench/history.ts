/**
 * History store benchmark (SQLite): `npx tsx bench/history.ts [servers] [checks]`.
 *
 * Loads 100,000 servers and 1,000,000 checks (10 a server over the last 7 days; a fifth of
 * the servers checked in the last 30 minutes, so ~16,000 are ranked) plus ~200,000
 * distinct-client look-ups, then prints medians of a /trends page and of /stats, straight
 * from the store and through app.inject (stats cache off), next to a baseline in the same
 * run: the same answers computed by aggregating the raw rows, which is what the
 * denormalised server rows and indexes avoid. Finally: checks written per second by the group
 * commit, alone and with a /trends reader beside it, next to the naive write (one Kysely
 * transaction per check, 64 concurrent writers). Figures only.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../src/config/index.js';
import { buildApp } from '../src/http/app.js';
import { Kysely, sql } from 'kysely';
import { openStore, type CheckRecord } from '../src/store/index.js';
import { SCORE_SCALE, playersScore } from '../src/store/ranking.js';
import type { Database as DatabaseSchema } from '../src/store/schema.js';
import { sqliteBinding, type SqliteBindingName } from '../src/store/sqlite/binding.js';
import { createSqliteDialect } from '../src/store/sqlite/dialect.js';

const SERVERS = Number(process.argv[2] ?? 100_000);
/** `BENCH_SQLITE_BINDING=libsql` (or better-sqlite3) measures that binding; default: the store's own. */
const BINDING = sqliteBinding((process.env.BENCH_SQLITE_BINDING as SqliteBindingName | undefined) || undefined);
const CHECKS = Number(process.argv[3] ?? 1_000_000);
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const NOW = Date.now();
const clock = { now: () => NOW };

let seed = 42;
function rand(): number {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

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
  const p95 = times[Math.floor(times.length * 0.95)]!;
  console.log(`  ${label.padEnd(52)} median ${m.toFixed(2).padStart(8)} ms   p95 ${p95.toFixed(2).padStart(8)} ms`);
  return m;
}

const dir = mkdtempSync(join(tmpdir(), 'observer-bench-'));
const path = join(dir, 'observer.db');
try {
  const config = loadConfig({ DATABASE_URL: `sqlite:${path}`, RATE_LIMIT_GENERAL: '10000000' });
  await (await openStore(config, clock, { sqliteBinding: BINDING.name })).close(); // schema

  console.log(`SQLite binding: ${BINDING.name} ${BINDING.version} on Node ${process.version}`);
  console.log(`Loading ${SERVERS.toLocaleString()} servers, ${CHECKS.toLocaleString()} checks into ${path}`);
  const start = performance.now();
  const raw = BINDING.open(path);
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = NORMAL');
  const insertServer = raw.prepare(
    `INSERT INTO servers (id, edition, host, port, first_seen, last_seen, record_players, last_online,
       players_online, players_max, clients_24h, trend_score) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`,
  );
  const insertCheck = raw.prepare(
    'INSERT INTO checks (server_id, checked_at, online, players_online, players_max, latency_ms, version) VALUES (?,?,?,?,?,?,?)',
  );
  const insertLookup = raw.prepare('INSERT INTO lookups (server_id, client_hash, seen_at) VALUES (?,?,?)');
  const ids: string[] = [];
  let lookups = 0;
  let ranked = 0;
  const perServer = CHECKS / SERVERS;
  const load = raw.transaction((from: number, to: number) => {
    for (let s = from; s < to; s++) {
      const id = randomUUID();
      ids.push(id);
      const edition = rand() < 0.8 ? 'java' : 'bedrock';
      const port = rand() < 0.7 ? (edition === 'java' ? 25565 : 19132) : 20000 + Math.floor(rand() * 1000);
      const popular = rand() < 0.2;
      const reliable = rand() < 0.85;
      const times = Array.from({ length: perServer }, () => NOW - Math.floor(rand() * 7 * DAY)).sort((a, b) => a - b);
      if (popular) times[times.length - 1] = NOW - Math.floor(rand() * 30 * MINUTE);
      let record = 0;
      let last = { online: 0, players: 0, max: 0 };
      for (const t of times) {
        const online = rand() < (reliable ? 0.95 : 0.3) ? 1 : 0;
        const players = online ? Math.floor(rand() * rand() * 2000) : null;
        const max = online ? 2000 : null;
        insertCheck.run(id, t, online, players, max, online ? 20 + rand() * 200 : null, online ? '1.21.4' : null);
        if (players !== null && players > record) record = players;
        last = { online, players: players ?? 0, max: max ?? 0 };
      }
      // Distinct clients of the last 24 hours: most servers have none or a few, some many.
      const clients = popular ? Math.floor(-Math.log(1 - rand()) * 8) : Math.floor(-Math.log(1 - rand()) * 0.5);
      for (let c = 0; c < clients; c++) {
        insertLookup.run(id, randomBytes(16).toString('base64url'), NOW - Math.floor(rand() * DAY));
      }
      lookups += clients;
      if (last.online && times[times.length - 1]! >= NOW - 30 * MINUTE) ranked++;
      const score = clients * SCORE_SCALE + (last.online ? playersScore(last.players) : 0);
      insertServer.run(id, edition, `mc${s}.example.com`, port, times[0], times[times.length - 1], record, last.online,
        last.players, last.max, clients, score);
    }
  });
  for (let s = 0; s < SERVERS; s += 5000) load(s, Math.min(SERVERS, s + 5000));
  raw.pragma('wal_checkpoint(TRUNCATE)');
  console.log(
    `  loaded in ${((performance.now() - start) / 1000).toFixed(1)} s: ${lookups.toLocaleString()} look-ups, ` +
      `${ranked.toLocaleString()} servers in the trend ranking`,
  );

  const store = await openStore(config, clock, { statsCacheMs: 0, sqliteBinding: BINDING.name });
  const app = await buildApp({ config, store, clock, logger: false });
  await app.ready();

  // A cursor deep in the ranking (around position 5,000).
  let cursor: string | null = null;
  for (let i = 0; i < 100 && (i === 0 || cursor); i++) cursor = (await store.trends(50, cursor)).nextCursor;
  const deep = cursor;

  console.log('\n/trends (page of 10, uptime of each server over 7 days)');
  const trendsFirst = await median('store.trends(10) first page', 300, () => store.trends(10, null));
  await median('store.trends(50) first page', 200, () => store.trends(50, null));
  const trendsDeep = await median('store.trends(10) at position ~5,000', 300, () => store.trends(10, deep));
  const trendsHttp = await median('GET /api/v1/trends via app.inject', 300, () => app.inject('/api/v1/trends'));
  // Baseline: the latest check of each server from checks (SQLite takes the bare columns
  // from the max() row), distinct clients counted from lookups, ranked in one sort.
  const naiveTrends = raw.prepare(
    `WITH latest AS (
       SELECT server_id, online, players_online, max(checked_at) AS at FROM checks WHERE checked_at >= ? GROUP BY server_id)
     SELECT latest.server_id,
            coalesce(l.n, 0) * ${SCORE_SCALE} + latest.players_online * ${SCORE_SCALE} / (latest.players_online + 1000) AS score
       FROM latest
       LEFT JOIN (SELECT server_id, count(*) AS n FROM lookups WHERE seen_at >= ? GROUP BY server_id) l
         ON l.server_id = latest.server_id
      WHERE latest.online = 1
      ORDER BY score DESC, latest.server_id LIMIT 11`,
  );
  const trendsBaseline = await median('baseline: rank by aggregating raw rows', 10, () =>
    naiveTrends.all(NOW - 30 * MINUTE, NOW - DAY),
  );

  console.log('\n/stats (uncached)');
  const statsStore = await median('store.stats()', 200, () => store.stats());
  const statsHttp = await median('GET /api/v1/stats via app.inject', 200, () => app.inject('/api/v1/stats'));
  const naiveStats = raw.prepare(
    `SELECT online, count(*), sum(players_online) FROM
       (SELECT server_id, online, players_online, max(checked_at) FROM checks WHERE checked_at >= ? GROUP BY server_id)
     GROUP BY online`,
  );
  const statsBaseline = await median('baseline: latest check per server from checks', 10, () => naiveStats.all(NOW - DAY));

  console.log('\nWrites (a check on an existing server, with its counters and a look-up)');
  const benchCheck = (i: number): CheckRecord => ({
    serverId: ids[Math.floor(rand() * ids.length)]!,
    edition: 'java',
    host: 'bench.example.com',
    port: 25565,
    checkedAt: NOW + i,
    online: true,
    playersOnline: Math.floor(rand() * 100),
    playersMax: 100,
    latencyMs: 30,
    version: '1.21.4',
  });
  // Baseline: the naive write, one Kysely transaction per check, 64 writers awaiting it;
  // counters and look-ups buffered.
  const kysely = new Kysely<DatabaseSchema>({ dialect: createSqliteDialect(path, BINDING.name).dialect });
  async function perCheckTransactions(ms: number, concurrency: number): Promise<number> {
    let written = 0;
    const deadline = performance.now() + ms;
    const writer = async () => {
      while (performance.now() < deadline) {
        await recordCheckPerTransaction(kysely, benchCheck(written));
        store.count({ totalChecks: 1, serverQueries: 1, totalRequests: 1, apiRequests: 1 });
        written++;
      }
    };
    const begin = performance.now();
    await Promise.all(Array.from({ length: concurrency }, writer));
    return written / ((performance.now() - begin) / 1000);
  }
  // Now: recordCheck, count and recordLookup only queue; the group commit writes 500 rows a
  // transaction. The producer queues as fast as it can while under 5,000 rows are waiting
  // (what ping clients would do, minus the pings); the figure counts rows committed.
  async function groupCommitted(ms: number, withReader: boolean): Promise<number> {
    let queued = 0;
    let stop = false;
    // SQLite reads settle in microtasks: the reader yields a turn each time, as HTTP readers do.
    const reader = async () => {
      while (!stop) {
        await store.trends(10, null);
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const readerDone = withReader ? reader() : Promise.resolve();
    const begin = performance.now();
    const deadline = begin + ms;
    while (performance.now() < deadline) {
      if (store.health().buffered > 5_000) {
        await new Promise((resolve) => setTimeout(resolve, 1));
        continue;
      }
      for (let b = 0; b < 100; b++, queued++) {
        const check = benchCheck(queued);
        store.recordCheck(check);
        store.count({ totalChecks: 1, serverQueries: 1, totalRequests: 1, apiRequests: 1 });
        store.recordLookup(check.serverId, randomBytes(8).toString('hex'));
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    await store.flush();
    const rate = queued / ((performance.now() - begin) / 1000);
    stop = true;
    await readerDone;
    return rate;
  }
  const before = await perCheckTransactions(5000, 64);
  console.log(`  before: one Kysely transaction per check, 64 writers ${Math.round(before).toLocaleString().padStart(8)} checks/s`);
  const alone = await groupCommitted(5000, false);
  console.log(`  group commit (50 ms / 500 rows), prepared statements ${Math.round(alone).toLocaleString().padStart(8)} checks/s  (${(alone / before).toFixed(1)}x)`);
  const mixed = await groupCommitted(5000, true);
  console.log(`  group commit + a /trends reader                      ${Math.round(mixed).toLocaleString().padStart(8)} checks/s  (${(mixed / before).toFixed(1)}x)`);
  await kysely.destroy();

  console.log('\nSummary (target: under 20 ms each)');
  console.log(`  /trends page: store ${trendsFirst.toFixed(2)} ms (deep ${trendsDeep.toFixed(2)} ms), HTTP ${trendsHttp.toFixed(2)} ms; baseline ${trendsBaseline.toFixed(1)} ms (${(trendsBaseline / trendsFirst).toFixed(0)}x)`);
  console.log(`  /stats:       store ${statsStore.toFixed(2)} ms, HTTP ${statsHttp.toFixed(2)} ms; baseline ${statsBaseline.toFixed(1)} ms (${(statsBaseline / statsStore).toFixed(0)}x)`);
  console.log(
    `  writes:       ${Math.round(alone).toLocaleString()} checks/s (${Math.round(mixed).toLocaleString()} with a reader); ` +
      `before ${Math.round(before).toLocaleString()} checks/s (${(alone / before).toFixed(1)}x)`,
  );

  await app.close();
  await store.close();
  raw.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/** The baseline write: a check, its server row and record in one Kysely transaction. */
async function recordCheckPerTransaction(db: Kysely<DatabaseSchema>, check: CheckRecord): Promise<void> {
  const players = Math.max(0, Math.floor(check.playersOnline ?? 0));
  const playersPart = playersScore(players);
  const newer = (column: 'last_online' | 'players_online' | 'players_max') =>
    sql<number>`CASE WHEN excluded.last_seen >= servers.last_seen THEN excluded.${sql.ref(column)} ELSE servers.${sql.ref(column)} END`;
  await db.transaction().execute(async (trx) => {
    const lookupRows = trx
      .selectFrom('lookups')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('server_id', '=', check.serverId);
    await trx
      .insertInto('servers')
      .values({
        id: check.serverId,
        edition: check.edition,
        host: check.host,
        port: check.port,
        first_seen: check.checkedAt,
        last_seen: check.checkedAt,
        record_players: players,
        last_online: 1,
        players_online: players,
        players_max: check.playersMax ?? 0,
        clients_24h: sql<number>`(${lookupRows})`,
        trend_score: sql<number>`(${lookupRows}) * ${SCORE_SCALE} + ${playersPart}`,
      })
      .onConflict((oc) =>
        oc.column('id').doUpdateSet({
          first_seen: sql`CASE WHEN excluded.first_seen < servers.first_seen THEN excluded.first_seen ELSE servers.first_seen END`,
          last_seen: sql`CASE WHEN excluded.last_seen >= servers.last_seen THEN excluded.last_seen ELSE servers.last_seen END`,
          record_players: sql`CASE WHEN excluded.record_players > servers.record_players THEN excluded.record_players ELSE servers.record_players END`,
          last_online: newer('last_online'),
          players_online: newer('players_online'),
          players_max: newer('players_max'),
          trend_score: sql`CASE WHEN excluded.last_seen >= servers.last_seen THEN servers.clients_24h * ${SCORE_SCALE} + ${playersPart} ELSE servers.trend_score END`,
        }),
      )
      .execute();
    await trx
      .insertInto('checks')
      .values({
        server_id: check.serverId,
        checked_at: check.checkedAt,
        online: 1,
        players_online: players,
        players_max: check.playersMax,
        latency_ms: check.latencyMs,
        version: check.version,
      })
      .execute();
  });
}
