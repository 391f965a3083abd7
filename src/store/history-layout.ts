/**
 * Migration 0003: history as a time series. Servers get an integer key (`sid`); raw checks
 * move to a table keyed by (server, time) holding only what is read; every check is rolled up
 * into an hourly row as it is written (`check_hours`); on PostgreSQL both tables are
 * partitioned by time (postgres/layout-migrations.ts). The rows of the previous layout are
 * carried over, and the hourly rows are computed from them. SQLite is vacuumed at the end,
 * which gives back the space of the old layout and turns on incremental auto-vacuum
 * (retention then gives space back as it goes).
 */
import { sql, type Kysely } from 'kysely';
import { ROLLUP_COLUMNS, rollupSelect } from './check-row.js';
import type { ObserverMigration } from './migration-runner.js';
import { postgresHistoryLayout } from './postgres/layout-migrations.js';
import type { Dialect } from './schema.js';

const SERVER_COLUMNS = `id, edition, host, port, first_seen, last_seen, record_players, last_online,
  players_online, players_max, clients_24h, trend_score`;

async function run(db: Kysely<unknown>, statements: string[]): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

/** Rows a step of the copy aims at (SQLite: the servers per step adapt to it; PostgreSQL: the rows read). */
export const DEFAULT_ROWS_PER_STEP = 50_000;

/**
 * Migration 0003 in resumable steps. On SQLite the first makes the new tables and numbers the
 * servers, each step copies the checks of a range of servers (about `rowsPerStep` checks) and
 * their hourly rows, the last drops the old tables and renames the new ones; the vacuum runs
 * after it. PostgreSQL's: postgres/layout-migrations.ts.
 */
export function historyLayoutMigration(dialect: Dialect, name: string, rowsPerStep = DEFAULT_ROWS_PER_STEP): ObserverMigration {
  if (dialect === 'postgres') return postgresHistoryLayout(name, rowsPerStep);
  return {
    name,
    begin: sqliteLayoutBegin,
    async step(trx, position) {
      const servers = await serversPerStep(trx, position, rowsPerStep);
      const { rows } = await sql<{ last: number | null; top: number | null }>`SELECT
        (SELECT sid FROM servers_next WHERE sid > ${position} ORDER BY sid LIMIT 1 OFFSET ${servers - 1}) AS last,
        (SELECT max(sid) FROM servers_next) AS top`.execute(trx);
      const top = Number(rows[0]?.top ?? 0);
      const last = rows[0]?.last == null ? top : Number(rows[0].last);
      if (last > position) await copyServers(trx, position, last);
      return { position: last, progress: top === 0 ? 1 : last / top, done: last >= top };
    },
    finish: sqliteLayoutFinish,
    after: sqliteVacuumOnce,
  };
}

/** The first transaction: leftovers of an earlier, interrupted attempt dropped; the new tables; the servers numbered. */
async function sqliteLayoutBegin(trx: Kysely<unknown>): Promise<void> {
  // Versions before the migrations were resumable left these behind when interrupted, while
  // the old tables were still whole.
  await run(trx, ['DROP TABLE IF EXISTS servers_next', 'DROP TABLE IF EXISTS checks_next', 'DROP TABLE IF EXISTS check_hours']);
  await run(trx, [
    `CREATE TABLE servers_next (sid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, edition TEXT NOT NULL,
      host TEXT NOT NULL, port INTEGER NOT NULL, first_seen INTEGER NOT NULL, last_seen INTEGER NOT NULL,
      record_players INTEGER NOT NULL DEFAULT 0, last_online INTEGER NOT NULL, players_online INTEGER NOT NULL DEFAULT 0,
      players_max INTEGER NOT NULL DEFAULT 0, clients_24h INTEGER NOT NULL DEFAULT 0, trend_score INTEGER NOT NULL DEFAULT 0)`,
    `INSERT INTO servers_next (${SERVER_COLUMNS}) SELECT ${SERVER_COLUMNS} FROM servers ORDER BY first_seen, id`,
    `CREATE TABLE checks_next (server INTEGER NOT NULL, checked_at INTEGER NOT NULL, online INTEGER NOT NULL,
      players_online INTEGER, players_max INTEGER, latency_ms INTEGER, PRIMARY KEY (server, checked_at)) WITHOUT ROWID`,
    `CREATE TABLE check_hours (server INTEGER NOT NULL, hour INTEGER NOT NULL, checks INTEGER NOT NULL,
      online INTEGER NOT NULL, players_n INTEGER NOT NULL, players_sum INTEGER NOT NULL, players_peak INTEGER,
      PRIMARY KEY (server, hour)) WITHOUT ROWID`,
  ]);
}

/** Servers sampled to size a step. */
const SAMPLE_SERVERS = 16;

/**
 * How many servers from `position` on hold about `rowsPerStep` checks, judged from the checks
 * of the next few (an index-only count); the same answer for the same position on every start.
 */
async function serversPerStep(trx: Kysely<unknown>, position: number, rowsPerStep: number): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*) AS n FROM servers_next s JOIN checks c ON c.server_id = s.id
    WHERE s.sid > ${position} AND s.sid <= ${position + SAMPLE_SERVERS}`.execute(trx);
  const sampled = Number(rows[0]?.n ?? 0);
  return Math.max(1, Math.min(100_000, Math.floor((SAMPLE_SERVERS * rowsPerStep) / Math.max(sampled, 1))));
}

/** Copies the checks of the servers numbered (after, last] and their hourly rows. */
async function copyServers(trx: Kysely<unknown>, after: number, last: number): Promise<void> {
  await sql
    .raw(
      `INSERT OR IGNORE INTO checks_next SELECT s.sid, CAST(c.checked_at AS INTEGER), c.online, c.players_online,
        c.players_max, CAST(round(c.latency_ms) AS INTEGER) FROM servers_next s JOIN checks c ON c.server_id = s.id
        WHERE s.sid > ${after} AND s.sid <= ${last} ORDER BY s.sid, c.checked_at`,
    )
    .execute(trx);
  await sql.raw(`INSERT INTO check_hours (${ROLLUP_COLUMNS}) ${rollupSelect(`checks_next WHERE server > ${after} AND server <= ${last}`)}`).execute(trx);
}

/** The last transaction: the old tables replaced by the new ones. */
async function sqliteLayoutFinish(trx: Kysely<unknown>): Promise<void> {
  await run(trx, [
    'DROP TABLE checks',
    'DROP TABLE servers',
    'ALTER TABLE servers_next RENAME TO servers',
    'ALTER TABLE checks_next RENAME TO checks',
    // /trends: walks online servers in ranking order; last_seen is in the index so that
    // servers whose latest check is too old are skipped without reading their rows.
    'CREATE INDEX servers_ranking ON servers (trend_score DESC, id, last_seen) WHERE last_online = 1',
    // /stats and the newest checks: servers by their latest check, answered from the index.
    'CREATE INDEX servers_last_seen ON servers (last_seen, last_online, players_online)',
  ]);
}

/**
 * After the commit (a VACUUM cannot run in a transaction), at every start until done: gives
 * back the old layout's space and turns on incremental auto-vacuum. The copy VACUUM builds
 * goes to a temporary file, not memory (where the SQLite builds keep temporary data by
 * default): in memory it would hold the whole database.
 */
async function sqliteVacuumOnce(db: Kysely<unknown>): Promise<void> {
  const { rows } = await sql<{ auto_vacuum: number }>`PRAGMA auto_vacuum`.execute(db);
  if (Number(rows[0]?.auto_vacuum) === 2) return;
  await run(db, ['PRAGMA temp_store = FILE', 'PRAGMA auto_vacuum = INCREMENTAL']);
  try {
    await run(db, ['VACUUM']);
  } finally {
    await run(db, ['PRAGMA temp_store = DEFAULT']);
  }
}
