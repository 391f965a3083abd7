/**
 * A database in the layout before migration 0003 (what Observer wrote until then): the
 * first two migrations applied by the service's own migration runner, then rows inserted as
 * that layout's writer stored them. The migration tests and the scale bench start from it.
 */
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { MigrationRunner } from '../../src/store/migrations/migration-runner.js';
import { observerMigrations } from '../../src/store/migrations/migrations.js';
import { sqliteBinding } from '../../src/store/sqlite/binding.js';
import { configureConnection } from '../../src/store/sqlite/connection.js';

export type LegacyDatabase = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

export interface LegacyServer {
  id: string;
  edition: string;
  host: string;
  port: number;
  first_seen: number;
  last_seen: number;
  record_players: number;
  last_online: number;
  players_online: number;
  players_max: number;
  clients_24h: number;
  trend_score: number;
}

export interface LegacyCheck {
  server_id: string;
  checked_at: number;
  online: number;
  players_online: number | null;
  players_max: number | null;
  latency_ms: number | null;
  version: string | null;
}

/**
 * A connection to `database` as an earlier Observer opened it (SQLite: on this thread, with
 * Kysely's own dialect). Earlier versions made their SQLite files without auto-vacuum: a table
 * made first fixes the mode.
 */
export async function connectLegacy(database: LegacyDatabase): Promise<Kysely<unknown>> {
  if (database.kind === 'sqlite') {
    const file = sqliteBinding().open(database.path);
    file.exec('CREATE TABLE made_before (x); DROP TABLE made_before;');
    file.close();
  }
  return database.kind === 'sqlite'
    ? new Kysely<unknown>({ dialect: new SqliteDialect({ database: configureConnection(sqliteBinding().open(database.path), 'writer') }) })
    : new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: database.url, max: 2 }) }) });
}

export async function openLegacy(database: LegacyDatabase): Promise<Kysely<unknown>> {
  const db = await connectLegacy(database);
  await new MigrationRunner(db, database.kind, observerMigrations(database.kind)).run('0002_watches');
  return db;
}

/** Inserts rows as the old layout held them, 500 a statement. */
export async function insertLegacy(db: Kysely<unknown>, table: 'servers' | 'checks', rows: Array<LegacyServer | LegacyCheck>): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    const chunk = rows.slice(i, i + 500);
    const columns = Object.keys(chunk[0]!);
    await sql`INSERT INTO ${sql.table(table)} (${sql.join(columns.map((c) => sql.ref(c)))}) VALUES ${sql.join(
      chunk.map((row) => sql`(${sql.join(columns.map((c) => (row as unknown as Record<string, unknown>)[c]))})`),
    )}`.execute(db);
  }
}
