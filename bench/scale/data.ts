/**
 * The history of a server list, written straight into a database for bench/scale.ts: `servers`
 * servers named `srv-<i>.scale.example` (Java, port 25565), each checked every 5 minutes for
 * `days` days up to `now`, as the store holds them with the default retention: raw checks for
 * the last two days, hourly rows for the whole span (at most 30 days), plus one hour of each
 * past its retention (the backlog the first retention pass removes). Look-ups from distinct
 * clients follow a long tail (a few servers popular, most looked up by one client or none).
 * Deterministic: the same figures give the same rows.
 *
 * Also the previous layout (before migration 0003) with every check raw, to time the migration.
 */
import { Kysely, sql } from 'kysely';
import { openStore } from '../../src/store/index.js';
import { playersScore, SCORE_SCALE } from '../../src/store/ranking.js';
import type { Database } from '../../src/store/schema.js';
import { createPostgresDialect } from '../../src/store/postgres/dialect.js';
import { ensureDayPartitions } from '../../src/store/postgres/partitions.js';
import { sqliteBinding, type SqliteConnection } from '../../src/store/sqlite/binding.js';
import { serverId } from '../../src/status/server-id.js';
import { openLegacy } from '../../test/store/legacy-layout.js';

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
const INTERVAL = 5 * MINUTE;
/** Raw checks are kept this long by default (CHECK_RETENTION_DAYS), hourly rows this long (ROLLUP_RETENTION_DAYS). */
const RAW_DAYS = 2;
const ROLLUP_DAYS = 30;

export interface ScaleSpec {
  name: string;
  servers: number;
  days: number;
}

export interface Built {
  /** Checks the history stands for (servers × days × 288). */
  checks: number;
  rawRows: number;
  hourRows: number;
  seconds: number;
}

export const hostOf = (i: number) => `srv-${i}.scale.example`;

/** A server's traits, from its index. */
function traits(i: number) {
  const h = Math.imul(i + 1, 2654435761) >>> 0;
  return {
    offset: h % INTERVAL,
    /** Share of checks online, in percent: most servers are up nearly always. */
    reliability: 80 + (h % 21),
    base: (h >>> 8) % 200,
    clients: Math.floor(60 / (1 + i / 20)),
  };
}

function online(i: number, k: number, reliability: number): boolean {
  return (Math.imul(i * 31 + k, 2246822519) >>> 0) % 100 < reliability;
}

interface HourRow {
  hour: number;
  checks: number;
  online: number;
  sum: number;
  peak: number | null;
}

/** Every check of server i over the span: raw rows in the raw window, and the hourly rows. */
function historyOf(i: number, spec: ScaleSpec, now: number, raw: (at: number, up: boolean, players: number | null) => void): HourRow[] {
  const t = traits(i);
  const rawFrom = now - RAW_DAYS * DAY - HOUR;
  const hourFrom = Math.floor((now - Math.min(spec.days, ROLLUP_DAYS) * DAY - HOUR) / HOUR);
  const first = Math.floor((now - spec.days * DAY - HOUR) / INTERVAL) * INTERVAL + t.offset;
  const hours: HourRow[] = [];
  let current: HourRow | undefined;
  for (let at = first, k = 0; at <= now; at += INTERVAL, k++) {
    const up = online(i, k, t.reliability);
    const players = up ? t.base + (k % 17) : null;
    if (at >= rawFrom) raw(at, up, players);
    const hour = Math.floor(at / HOUR);
    if (hour < hourFrom) continue;
    if (current === undefined || current.hour !== hour) {
      current = { hour, checks: 0, online: 0, sum: 0, peak: null };
      hours.push(current);
    }
    current.checks += 1;
    if (up) {
      current.online += 1;
      current.sum += players!;
      current.peak = Math.max(current.peak ?? -1, players!);
    }
  }
  return hours;
}

function serverRow(i: number, now: number, spec: ScaleSpec) {
  const t = traits(i);
  const lastSeen = Math.floor((now - t.offset) / INTERVAL) * INTERVAL + t.offset;
  const up = t.reliability > 82 ? 1 : 0;
  const players = up ? t.base : 0;
  return {
    id: serverId('java', hostOf(i), 25565),
    edition: 'java',
    host: hostOf(i),
    port: 25565,
    first_seen: now - spec.days * DAY,
    last_seen: lastSeen > now ? lastSeen - INTERVAL : lastSeen,
    record_players: t.base + 16,
    last_online: up,
    players_online: players,
    players_max: 500,
    clients_24h: t.clients,
    trend_score: t.clients * SCORE_SCALE + (up ? playersScore(players) : 0),
  };
}

/** Creates the schema through the store itself, so the layout is the one the service runs on. */
async function migrated(database: { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string }): Promise<void> {
  const store = await openStore({ database, checkRetentionDays: RAW_DAYS });
  await store.close();
}

export async function buildSqlite(path: string, spec: ScaleSpec, now: number): Promise<Built> {
  const started = performance.now();
  await migrated({ kind: 'sqlite', path });
  const db = sqliteBinding().open(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  db.pragma('cache_size = -262144');
  const counts = writeRows(db, spec, now);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return { ...counts, checks: spec.servers * spec.days * (DAY / INTERVAL), seconds: (performance.now() - started) / 1000 };
}

function writeRows(db: SqliteConnection, spec: ScaleSpec, now: number): { rawRows: number; hourRows: number } {
  const insertServer = db.prepare(`INSERT INTO servers (id, edition, host, port, first_seen, last_seen, record_players, last_online,
    players_online, players_max, clients_24h, trend_score) VALUES (@id, @edition, @host, @port, @first_seen, @last_seen,
    @record_players, @last_online, @players_online, @players_max, @clients_24h, @trend_score)`);
  const insertCheck = db.prepare('INSERT INTO checks (server, checked_at, online, players_online, players_max, latency_ms) VALUES (?, ?, ?, ?, ?, ?)');
  const insertHour = db.prepare('INSERT INTO check_hours (server, hour, checks, online, players_n, players_sum, players_peak) VALUES (?, ?, ?, ?, ?, ?, ?)');
  const insertLookup = db.prepare('INSERT INTO lookups (server_id, client_hash, seen_at) VALUES (?, ?, ?)');
  let rawRows = 0;
  let hourRows = 0;
  const block = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const server = serverRow(i, now, spec);
      const sid = i + 1;
      insertServer.run(server);
      const hours = historyOf(i, spec, now, (at, up, players) => {
        insertCheck.run(sid, at, up ? 1 : 0, players, up ? 500 : null, up ? 20 + (i % 60) : null);
        rawRows += 1;
      });
      for (const h of hours) insertHour.run(sid, h.hour, h.checks, h.online, h.online, h.sum, h.peak);
      hourRows += hours.length;
      for (let c = 0; c < server.clients_24h; c++) insertLookup.run(server.id, `c${c}-${i}`, now - ((c * 7919) % DAY));
    }
  });
  for (let i = 0; i < spec.servers; i += 500) block(i, Math.min(spec.servers, i + 500));
  db.prepare("INSERT INTO counters (name, value) VALUES ('totalChecks', ?), ('serverQueries', ?)").run(spec.servers * spec.days * 288, spec.servers * 50);
  return { rawRows, hourRows };
}

/**
 * The same history on PostgreSQL, generated by the server (generate_series), in the partitions
 * the store makes: one per day of the span.
 */
export async function buildPostgres(url: string, spec: ScaleSpec, now: number): Promise<Built> {
  const started = performance.now();
  await migrated({ kind: 'postgres', url });
  const db = new Kysely<Database>({ dialect: createPostgresDialect(url, () => {}) });
  try {
    await ensureDayPartitions(db, Math.floor((now - Math.min(spec.days, ROLLUP_DAYS) * DAY - HOUR) / DAY), Math.floor(now / DAY));
    for (let i = 0; i < spec.servers; i += 1000) {
      const rows = Array.from({ length: Math.min(1000, spec.servers - i) }, (_, k) => serverRow(i + k, now, spec));
      await db.insertInto('servers').values(rows).execute();
    }
    const rawFrom = now - RAW_DAYS * DAY - HOUR;
    const hourFrom = Math.floor((now - Math.min(spec.days, ROLLUP_DAYS) * DAY - HOUR) / HOUR);
    // The same traits as traits() and online(), in SQL.
    const h = sql`((s.sid::bigint * 2654435761) % 4294967296)`;
    for (let from = 0; from < spec.servers; from += 5000) {
      const range = sql`s.sid > ${from} AND s.sid <= ${from + 5000}`;
      await sql`INSERT INTO checks (server, checked_at, online, players_online, players_max, latency_ms)
        SELECT s.sid, t, (((s.sid * 31 + t / ${INTERVAL}) * 2246822519) % 100 < 80 + ${h} % 21)::int,
          ${h} % 200 + (t / ${INTERVAL}) % 17, 500, 20 + s.sid % 60
        FROM servers s, generate_series(${Math.floor(rawFrom / INTERVAL) * INTERVAL}::bigint + ${h} % ${INTERVAL}, ${now}::bigint, ${INTERVAL}::bigint) t
        WHERE ${range}`.execute(db);
      await sql`INSERT INTO check_hours (server, hour, checks, online, players_n, players_sum, players_peak)
        SELECT s.sid, hr, 12, 12 - (s.sid + hr) % 3, 12 - (s.sid + hr) % 3, (12 - (s.sid + hr) % 3) * (${h} % 200 + 8), ${h} % 200 + 16
        FROM servers s, generate_series(${hourFrom}, ${Math.floor(now / HOUR)}) hr WHERE ${range}`.execute(db);
    }
    const lookups = await db.selectFrom('servers').select(['id', 'clients_24h']).where('clients_24h', '>', 0).execute();
    const rows = lookups.flatMap((s) => Array.from({ length: Number(s.clients_24h) }, (_, c) => ({ server_id: s.id, client_hash: `c${c}-${s.id}`, seen_at: now - ((c * 7919) % DAY) })));
    for (let i = 0; i < rows.length; i += 2000) await db.insertInto('lookups').values(rows.slice(i, i + 2000)).execute();
    await sql`ANALYZE`.execute(db);
    const count = async (table: 'checks' | 'check_hours') => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM ${sql.table(table)}`.execute(db)).rows[0]!.n);
    return { checks: spec.servers * spec.days * (DAY / INTERVAL), rawRows: await count('checks'), hourRows: await count('check_hours'), seconds: (performance.now() - started) / 1000 };
  } finally {
    await db.destroy();
  }
}

/** The previous layout with every check of the span raw, as that version stored them. */
export async function buildLegacySqlite(path: string, spec: ScaleSpec, now: number): Promise<number> {
  const legacy = await openLegacy({ kind: 'sqlite', path });
  await legacy.destroy();
  const db = sqliteBinding().open(path);
  db.pragma('synchronous = OFF');
  const insertServer = db.prepare(`INSERT INTO servers (id, edition, host, port, first_seen, last_seen, record_players, last_online,
    players_online, players_max, clients_24h, trend_score) VALUES (@id, @edition, @host, @port, @first_seen, @last_seen,
    @record_players, @last_online, @players_online, @players_max, @clients_24h, @trend_score)`);
  const insertCheck = db.prepare('INSERT INTO checks (server_id, checked_at, online, players_online, players_max, latency_ms, version) VALUES (?, ?, ?, ?, ?, ?, ?)');
  let checks = 0;
  const block = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const server = serverRow(i, now, spec);
      insertServer.run(server);
      const t = traits(i);
      for (let at = now - spec.days * DAY + t.offset, k = 0; at <= now; at += INTERVAL, k++) {
        const up = online(i, k, t.reliability);
        insertCheck.run(server.id, at, up ? 1 : 0, up ? t.base : null, up ? 500 : null, 20.5, '1.21.4');
        checks += 1;
      }
    }
  });
  for (let i = 0; i < spec.servers; i += 200) block(i, Math.min(spec.servers, i + 200));
  db.close();
  return checks;
}
