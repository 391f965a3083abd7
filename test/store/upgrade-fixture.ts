/**
 * A database as an earlier Observer left it: the schema after its first `version` migrations
 * (0: nothing at all), applied by the real migrations, and a history of `servers` servers up
 * to `end` in the layout of before migration 0003 (carried over by the later migrations when
 * `version` is past it), written as that version's writer wrote it: one row per check in the
 * order the checks were made, every server's checks interleaved with everybody else's. With
 * `heavyTail`, the checks are shared out as a real server list's are: a few servers looked up
 * all the time (one check a minute, the most the status cache lets through), most of them
 * rarely. The rows are made by the database itself, one set-based statement per slice of
 * time. The migration crash test and the upgrade bench start from it.
 */
import { type Kysely, sql } from 'kysely';
import { serverId } from '../../src/status/server-id.js';
import { MigrationRunner } from '../../src/store/migrations/migration-runner.js';
import { observerMigrations } from '../../src/store/migrations/migrations.js';
import { connectLegacy, type LegacyDatabase } from './legacy-layout.js';

export interface HistoryShape {
  servers: number;
  /** Checks per server: each server's with an even spread, else the average. */
  checksPerServer: number;
  /** Between two checks of a server with an even spread; `checksPerServer` of them span the history. */
  intervalMs: number;
  /** The newest check (ms since the epoch). */
  end: number;
  /** Server i (0-based) gets about C / (i + 1) checks, between one and one a minute, spread over the span. */
  heavyTail?: boolean;
}

/** The address of server `i` (0-based) of a fixture, as /history takes it. */
export function fixtureAddress(i: number): string {
  return `s${i}.example.com:${FIRST_PORT + i}`;
}

const FIRST_PORT = 20_000;
/** The closest two checks of one server can be: the status cache's lifetime. */
const BUSIEST_INTERVAL_MS = 60_000;
/** Checks made by one statement at most (SQLite sorts each statement's rows by time). */
const CHECKS_PER_STATEMENT = 1_000_000;
/** The migrations in order; `version` counts how many of them the database has. */
export const MIGRATION_NAMES = observerMigrations('sqlite').map((m) => m.name);

export async function buildDatabase(database: LegacyDatabase, version: number, shape: HistoryShape): Promise<void> {
  if (version === 0) return;
  const db = await connectLegacy(database);
  try {
    const runner = new MigrationRunner(db, database.kind, observerMigrations(database.kind));
    await runner.run(MIGRATION_NAMES[0]);
    await insertHistory(db, database.kind, shape);
    if (version > 1) await runner.run(MIGRATION_NAMES[version - 1]);
    // That version finished its upgrade: the work after the commits too.
    if (version > 1) await runner.runAfterCommit();
  } finally {
    await db.destroy();
  }
}

/** How many checks the fixture holds. */
export function fixtureChecks(shape: HistoryShape): number {
  return plan(shape).reduce((sum, server) => sum + server.checks, 0);
}

/** A server's checks: how many, the first one's time, and the time between two. */
interface ServerPlan {
  checks: number;
  first: number;
  interval: number;
}

function plan(shape: HistoryShape): ServerPlan[] {
  const { servers, checksPerServer, intervalMs, end } = shape;
  const span = checksPerServer * intervalMs;
  if (!shape.heavyTail) return Array.from({ length: servers }, () => ({ checks: checksPerServer, first: end - (checksPerServer - 1) * intervalMs, interval: intervalMs }));
  const most = Math.max(1, Math.floor(span / BUSIEST_INTERVAL_MS));
  const counts = (scale: number) => Array.from({ length: servers }, (_, i) => Math.min(most, Math.max(1, Math.round(scale / (i + 1)))));
  const wanted = servers * checksPerServer;
  // The scale whose counts add up to the checks wanted (they grow with it).
  let [low, high] = [0, wanted];
  for (let i = 0; i < 60; i++) {
    const middle = (low + high) / 2;
    if (counts(middle).reduce((a, b) => a + b, 0) < wanted) low = middle;
    else high = middle;
  }
  return counts(high).map((checks, i) => {
    const interval = Math.floor(span / checks);
    // Each server's checks start at a point of its own within its first interval.
    return { checks, first: end - span + ((i + 1) * 2654435761) % interval, interval };
  });
}

/** The servers and their checks, in the layout of migration 0001, the checks in the order of their times. */
async function insertHistory(db: Kysely<unknown>, kind: LegacyDatabase['kind'], shape: HistoryShape): Promise<void> {
  const servers = plan(shape);
  if (kind === 'sqlite') {
    // The fixture's own connection: rows written once (no log to copy them from; a fixture cut
    // short is built again), the indexes sorted in a cache of 256 MiB.
    await sql`PRAGMA journal_mode = OFF`.execute(db);
    await sql`PRAGMA cache_size = -262144`.execute(db);
  }
  await sql`CREATE TABLE legacy_plan (i integer PRIMARY KEY, id text NOT NULL, port integer NOT NULL, checks integer NOT NULL, first bigint NOT NULL, step bigint NOT NULL)`.execute(db);
  // Server i: its id as the service computes it from its address, so that /history finds it.
  for (let from = 0; from < servers.length; from += 500) {
    const rows = servers.slice(from, from + 500).map(({ checks, first, interval }, k) => {
      const i = from + k;
      return sql`(${i}, ${serverId('java', `s${i}.example.com`, FIRST_PORT + i)}, ${FIRST_PORT + i}, ${checks}, ${first}, ${interval})`;
    });
    await sql`INSERT INTO legacy_plan (i, id, port, checks, first, step) VALUES ${sql.join(rows)}`.execute(db);
  }
  await sql`INSERT INTO servers (id, edition, host, port, first_seen, last_seen, record_players, last_online,
      players_online, players_max, clients_24h, trend_score)
    SELECT id, 'java', 's' || i || '.example.com', port, first, first + (checks - 1) * step, 49, 1, i % 50, 100, 0, i
    FROM legacy_plan ORDER BY i`.execute(db);
  const most = Math.max(...servers.map((s) => s.checks));
  if (kind === 'sqlite') {
    await sql`CREATE TABLE legacy_numbers (n integer PRIMARY KEY)`.execute(db);
    await sql.raw(`INSERT INTO legacy_numbers WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < ${most - 1}) SELECT n FROM k`).execute(db);
  }
  const total = servers.reduce((sum, s) => sum + s.checks, 0);
  const start = Math.min(...servers.map((s) => s.first));
  const slices = Math.ceil(total / CHECKS_PER_STATEMENT);
  const width = Math.ceil((shape.end + 1 - start) / slices);
  // The rows first, then the indexes, as migration 0001 made them: the same table as the old
  // writer's, its indexes built in one pass rather than over time (the copy reads the table).
  for (const index of ['checks_server_time', 'checks_time']) await db.schema.dropIndex(index).execute();
  for (let from = start; from <= shape.end; from += width) await insertChecks(db, kind, from, Math.min(from + width, shape.end + 1));
  await db.schema.createIndex('checks_server_time').on('checks').columns(['server_id', 'checked_at', 'online']).execute();
  await db.schema.createIndex('checks_time').on('checks').columns(['checked_at', 'id']).execute();
  await sql`DROP TABLE legacy_plan`.execute(db);
  if (kind === 'sqlite') {
    await sql`DROP TABLE legacy_numbers`.execute(db);
    await sql`PRAGMA journal_mode = WAL`.execute(db);
  }
}

/** The checks made in [from, until), in the order of their times. */
async function insertChecks(db: Kysely<unknown>, kind: LegacyDatabase['kind'], from: number, until: number): Promise<void> {
  // Check n of a server is at first + n * step: the n from `low` to `high` fall in the slice.
  const smaller = sql.raw(kind === 'sqlite' ? 'min' : 'least');
  const [start, end] = [sql.lit(from), sql.lit(until - 1)];
  const low = sql`CASE WHEN p.first >= ${start} THEN 0 ELSE (${start} - p.first + p.step - 1) / p.step END`;
  const high = sql`CASE WHEN p.first > ${end} THEN -1 ELSE ${smaller}((${end} - p.first) / p.step, p.checks - 1) END`;
  const numbers =
    kind === 'sqlite'
      ? sql`legacy_plan p JOIN legacy_numbers k ON k.n BETWEEN ${low} AND ${high}`
      : sql`legacy_plan p CROSS JOIN LATERAL generate_series(${low}, ${high}) AS k(n)`;
  // Online but every 7th check, players cycling 0..49.
  await sql`INSERT INTO checks (server_id, checked_at, online, players_online, players_max, latency_ms, version)
    SELECT p.id, p.first + k.n * p.step AS at, CASE WHEN (k.n + p.port) % 7 = 0 THEN 0 ELSE 1 END,
      CASE WHEN (k.n + p.port) % 7 = 0 THEN NULL ELSE (k.n + p.port) % 50 END, 100, 12.5, '1.21.4'
    FROM ${numbers} ORDER BY at, p.i`.execute(db);
}
