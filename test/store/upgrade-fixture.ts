/**
 * A database as an earlier Observer left it: the schema after its first `version` migrations
 * (0: nothing at all), applied by the real migrations, and a history of `servers` servers
 * checked every `intervalMs` up to `end`, inserted with one set-based statement per table in
 * the layout of before migration 0003 (carried over by the later migrations when `version`
 * is past it). The migration crash test and the upgrade bench start from it.
 */
import { type Kysely, sql } from 'kysely';
import { serverId } from '../../src/status/server-id.js';
import { MigrationRunner } from '../../src/store/migration-runner.js';
import { observerMigrations } from '../../src/store/migrations.js';
import { connectLegacy, type LegacyDatabase } from './legacy-layout.js';

export interface HistoryShape {
  servers: number;
  checksPerServer: number;
  intervalMs: number;
  /** The newest check of every server (ms since the epoch). */
  end: number;
}

/** The address of server `i` (0-based) of a fixture, as /history takes it. */
export function fixtureAddress(i: number): string {
  return `s${i}.example.com:${FIRST_PORT + i}`;
}

const FIRST_PORT = 20_000;
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
  } finally {
    await db.destroy();
  }
}

/** The servers and their checks, in the layout of migration 0001. */
async function insertHistory(db: Kysely<unknown>, kind: LegacyDatabase['kind'], shape: HistoryShape): Promise<void> {
  const { servers, checksPerServer, intervalMs, end } = shape;
  // Server i: its id as the service computes it from its address, so that /history finds it.
  for (let from = 0; from < servers; from += 500) {
    const rows = Array.from({ length: Math.min(500, servers - from) }, (_, k) => {
      const i = from + k;
      const port = FIRST_PORT + i;
      const host = `s${i}.example.com`;
      return sql`(${serverId('java', host, port)}, 'java', ${host}, ${port}, ${end - (checksPerServer - 1) * intervalMs}, ${end}, 49, 1, ${i % 50}, 100, 0, ${i})`;
    });
    await sql`INSERT INTO servers (id, edition, host, port, first_seen, last_seen, record_players, last_online,
        players_online, players_max, clients_24h, trend_score) VALUES ${sql.join(rows)}`.execute(db);
  }
  const numbers =
    kind === 'sqlite'
      ? sql.raw(`WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < ${checksPerServer - 1}) SELECT n FROM k`)
      : sql.raw(`SELECT generate_series(0, ${checksPerServer - 1}) AS n`);
  // Online but every 7th check, players cycling 0..49.
  await sql`INSERT INTO checks (server_id, checked_at, online, players_online, players_max, latency_ms, version)
    SELECT s.id, ${sql.lit(end)} - k.n * CAST(${sql.lit(intervalMs)} AS BIGINT), CASE WHEN (k.n + s.port) % 7 = 0 THEN 0 ELSE 1 END,
      CASE WHEN (k.n + s.port) % 7 = 0 THEN NULL ELSE (k.n + s.port) % 50 END, 100, 12.5, '1.21.4'
    FROM servers s CROSS JOIN (${numbers}) AS k ORDER BY s.id, k.n DESC`.execute(db);
}
