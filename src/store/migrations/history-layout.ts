/**
 * Migration 0003: history as a time series. Servers get an integer key (`sid`); raw checks
 * move to a table keyed by (server, time) holding only what is read; every check is rolled up
 * into an hourly row as it is written (`check_hours`); on PostgreSQL both tables are
 * partitioned by time (postgres/layout-migrations.ts). The rows of the previous layout are
 * carried over, and the hourly rows are computed from them. SQLite is vacuumed at the end,
 * which gives back the space of the old layout and turns on incremental auto-vacuum
 * (retention then gives space back as it goes).
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { HOUR_MS, ROLLUP_COLUMNS, rollupSelect } from '../history/check-row.js';
import type { ObserverMigration, StepResult } from './migration-runner.js';
import { postgresHistoryLayout } from '../postgres/layout-migrations.js';
import type { Dialect } from '../schema.js';

const SERVER_COLUMNS = `id, edition, host, port, first_seen, last_seen, record_players, last_online,
  players_online, players_max, clients_24h, trend_score`;

async function run(db: Kysely<unknown>, statements: string[]): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

/** Rows a step of the copy moves at most (SQLite), or reads (PostgreSQL). */
export const DEFAULT_ROWS_PER_STEP = 50_000;

/**
 * Migration 0003 in resumable steps. On SQLite (sqliteCopy): the first makes the new tables
 * and numbers the servers, each step moves a bounded number of checks, the last swaps the new
 * tables in; the old ones are dropped and the file vacuumed after it, in the work after the
 * commit. PostgreSQL's: postgres/layout-migrations.ts.
 */
export function historyLayoutMigration(dialect: Dialect, name: string, rowsPerStep = DEFAULT_ROWS_PER_STEP): ObserverMigration {
  if (dialect === 'postgres') return postgresHistoryLayout(name, rowsPerStep);
  return {
    name,
    begin: sqliteLayoutBegin,
    step: (trx, position) => (position < SORTED ? sortStep(trx, position, rowsPerStep) : gatherStep(trx, position, rowsPerStep)),
    stage: (position) => (position < SORTED ? 'sort' : 'gather'),
    progress: copyProgress,
    finish: sqliteLayoutFinish,
    after: { due: sqliteCleanupDue, run: sqliteCleanup },
  };
}

/**
 * How the SQLite copy gets a history written in time order (every server's checks interleaved
 * with everybody else's) into one clustered by (server, time) at the speed of reading and
 * writing it once more, in steps of at most `rowsPerStep` rows:
 *
 * - sort: the old table is read in its own order (sequentially, from the rowid where the last
 *   step stopped) into `checks_sorting`, keyed by the group of 2^shift servers each check
 *   belongs to, then its old rowid. Each step appends at the end of each group's range: a few
 *   hundred pages are written, never the whole table.
 * - gather: `checks_sorting` is read in key order into the new table: the checks of one group
 *   of servers at a time, in time order, so each lands at the end of its server's range (a
 *   group's pages stay in the cache), and is added to its hour's row.
 *
 * Reading the old table through its index by server instead would fetch its rows one at a
 * time from all over the file (seconds per step, minutes per million checks, on a history
 * written over time).
 *
 * A position below SORTED is the old rowid the sort reached; from SORTED on, the key of
 * `checks_sorting` the gathering reached. A key is (group + 1) * SORTED + old rowid: the old
 * rowids stay below 2^40 (a trillion checks) and the groups below 2^12, so every key is an
 * exact JavaScript number.
 */
const SORTED = 2 ** 40;
/** Groups of servers at most (their number of servers grows with the list to keep it so). */
const MOST_GROUPS_LOG2 = 12;
/** Servers per group at least (log2): the pages a step of the gathering writes at once. */
const GROUP_LOG2 = 9;

/** Servers per group (log2), from the highest sid: the same at every step. */
async function groupShift(trx: Kysely<unknown>): Promise<number> {
  const top = await oneNumber(trx, sql`SELECT max(sid) AS n FROM servers_next`);
  return Math.max(GROUP_LOG2, Math.ceil(Math.log2(top + 1)) - MOST_GROUPS_LOG2);
}

async function oneNumber(trx: Kysely<unknown>, query: RawBuilder<unknown>): Promise<number> {
  const { rows } = await (query as RawBuilder<{ n: number | null }>).execute(trx);
  return Number(rows[0]?.n ?? 0);
}

/** How many rows follow `after` in `table` (by `key`), at most `limit`, and the key of the last of them. */
async function nextRows(trx: Kysely<unknown>, table: 'checks' | 'checks_sorting', key: 'id' | 'key', after: number, limit: number): Promise<{ rows: number; last: number }> {
  const { rows } = await sql<{ n: number; last: number | null }>`SELECT count(*) AS n, max(${sql.ref(key)}) AS last
    FROM (SELECT ${sql.ref(key)} FROM ${sql.table(table)} WHERE ${sql.ref(key)} > ${after} ORDER BY ${sql.ref(key)} LIMIT ${limit})`.execute(trx);
  return { rows: Number(rows[0]?.n ?? 0), last: Number(rows[0]?.last ?? after) };
}

/** The span of the old rowids: where the sort starts and ends. */
async function oldRowids(trx: Kysely<unknown>): Promise<{ first: number; last: number }> {
  // Two subqueries: SQLite answers a lone min() or max() from the end of the key, both in one SELECT by a scan.
  const { rows } = await sql<{ first: number | null; last: number | null }>`SELECT (SELECT min(id) FROM checks) AS first, (SELECT max(id) FROM checks) AS last`.execute(trx);
  return { first: Number(rows[0]?.first ?? 0), last: Number(rows[0]?.last ?? 0) };
}

/** One step of the sort: the next rows of the old table into checks_sorting; past its end, the gathering's first position. */
async function sortStep(trx: Kysely<unknown>, position: number, rowsPerStep: number): Promise<StepResult> {
  const { rows, last } = await nextRows(trx, 'checks', 'id', position, rowsPerStep);
  if (rows === 0) return { position: SORTED, progress: 0.5, done: false, rows: 0 };
  const shift = await groupShift(trx);
  await sql`INSERT INTO checks_sorting (key, server, checked_at, online, players_online, players_max, latency_ms)
    SELECT ((s.sid >> ${shift}) + 1) * ${SORTED} + c.id, s.sid, CAST(c.checked_at AS INTEGER), c.online, c.players_online,
      c.players_max, CAST(round(c.latency_ms) AS INTEGER)
    FROM checks c JOIN servers_next s ON s.id = c.server_id WHERE c.id > ${position} AND c.id <= ${last}`.execute(trx);
  return { position: last, progress: await copyProgress(trx, last), done: false, rows };
}

/**
 * One step of the gathering: the next rows of checks_sorting into the new table, and their
 * sums into their hours' rows. A check the new table holds already (the old one could hold a
 * check twice) is kept once: a step that meets one counts the hours it touched again from the
 * new table instead.
 */
async function gatherStep(trx: Kysely<unknown>, position: number, rowsPerStep: number): Promise<StepResult> {
  const { rows, last } = await nextRows(trx, 'checks_sorting', 'key', position, rowsPerStep);
  const moved = `checks_sorting WHERE key > ${position} AND key <= ${last}`;
  const { numAffectedRows: inserted } = await sql
    .raw(`INSERT OR IGNORE INTO checks_next SELECT server, checked_at, online, players_online, players_max, latency_ms FROM ${moved}`)
    .execute(trx);
  if (Number(inserted ?? 0) === rows) {
    await sql.raw(`INSERT INTO check_hours (${ROLLUP_COLUMNS}) ${rollupSelect(moved)} ${ADD_TO_HOURS}`).execute(trx);
  } else {
    const touched = `SELECT DISTINCT server, checked_at / ${HOUR_MS} AS hour FROM ${moved}`;
    const hourChecks = `(SELECT n.* FROM (${touched}) t JOIN checks_next n ON n.server = t.server
      AND n.checked_at >= t.hour * ${HOUR_MS} AND n.checked_at < (t.hour + 1) * ${HOUR_MS})`;
    await sql.raw(`INSERT OR REPLACE INTO check_hours (${ROLLUP_COLUMNS}) ${rollupSelect(hourChecks)}`).execute(trx);
  }
  const end = await oneNumber(trx, sql`SELECT max(key) AS n FROM checks_sorting`);
  return { position: last, progress: await copyProgress(trx, last), done: last >= end, rows };
}

/** An hour's sums added to the row the steps before made of it. */
const ADD_TO_HOURS = `ON CONFLICT (server, hour) DO UPDATE SET checks = checks + excluded.checks, online = online + excluded.online,
  players_n = players_n + excluded.players_n, players_sum = players_sum + excluded.players_sum,
  players_peak = CASE WHEN excluded.players_peak > coalesce(players_peak, -1) THEN excluded.players_peak ELSE players_peak END`;

/** The fraction of the copy done at `position`: the sort is the first half, the gathering the second. */
async function copyProgress(db: Kysely<unknown>, position: number): Promise<number> {
  const fraction = (at: number, first: number, last: number) => (last <= first ? 1 : Math.min(1, Math.max(0, (at - first) / (last - first))));
  if (position < SORTED) {
    const { first, last } = await oldRowids(db);
    return 0.5 * fraction(position, first - 1, last);
  }
  const first = await oneNumber(db, sql`SELECT min(key) AS n FROM checks_sorting`);
  const last = await oneNumber(db, sql`SELECT max(key) AS n FROM checks_sorting`);
  return 0.5 + 0.5 * fraction(position, first - 1, last);
}

/** The first transaction: leftovers of an earlier, interrupted attempt dropped; the new tables; the servers numbered. */
async function sqliteLayoutBegin(trx: Kysely<unknown>): Promise<void> {
  if ((await oldRowids(trx)).last >= SORTED) throw new Error(`the checks table's rowids reach past ${SORTED}: it cannot be copied in steps`);
  // Versions before the migrations were resumable left these behind when interrupted, while
  // the old tables were still whole.
  await run(trx, ['servers_next', 'checks_next', 'check_hours', 'checks_sorting'].map((table) => `DROP TABLE IF EXISTS ${table}`));
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
    `CREATE TABLE checks_sorting (key INTEGER PRIMARY KEY, server INTEGER NOT NULL, checked_at INTEGER NOT NULL,
      online INTEGER NOT NULL, players_online INTEGER, players_max INTEGER, latency_ms INTEGER)`,
  ]);
}

/** The old tables that the last transaction sets aside, and the work after it drops. */
const SET_ASIDE = ['checks_previous', 'servers_previous', 'checks_sorting'];

/**
 * The last transaction: the new tables take the old ones' names. The old ones are renamed,
 * not dropped: dropping a table reads every page of it, seconds for a large history, which
 * the work after the commit does instead (the service answers from the new tables by then).
 */
async function sqliteLayoutFinish(trx: Kysely<unknown>): Promise<void> {
  await run(trx, [
    // The new servers table's indexes take these names.
    'DROP INDEX servers_ranking',
    'DROP INDEX servers_last_seen',
    'ALTER TABLE checks RENAME TO checks_previous',
    'ALTER TABLE servers RENAME TO servers_previous',
    'ALTER TABLE servers_next RENAME TO servers',
    'ALTER TABLE checks_next RENAME TO checks',
    // /trends: walks online servers in ranking order; last_seen is in the index so that
    // servers whose latest check is too old are skipped without reading their rows.
    'CREATE INDEX servers_ranking ON servers (trend_score DESC, id, last_seen) WHERE last_online = 1',
    // /stats and the newest checks: servers by their latest check, answered from the index.
    'CREATE INDEX servers_last_seen ON servers (last_seen, last_online, players_online)',
  ]);
}

/** Whether the work after the commit is left: old tables to drop, or a file never vacuumed into incremental auto-vacuum. */
async function sqliteCleanupDue(db: Kysely<unknown>): Promise<boolean> {
  const { rows } = await sql<{ auto_vacuum: number }>`PRAGMA auto_vacuum`.execute(db);
  if (Number(rows[0]?.auto_vacuum) !== 2) return true;
  const { rows: left } = await sql`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name IN (${sql.join(SET_ASIDE)})`.execute(db);
  return left.length > 0;
}

/**
 * After the commit (a VACUUM cannot run in a transaction), at every start until done: drops
 * the old tables, gives back their space and turns on incremental auto-vacuum (retention then
 * gives space back as it goes). The copy VACUUM builds goes to a temporary file, not memory
 * (where the SQLite builds keep temporary data by default): in memory it would hold the whole
 * database.
 */
async function sqliteCleanup(db: Kysely<unknown>): Promise<void> {
  await run(db, SET_ASIDE.map((table) => `DROP TABLE IF EXISTS ${table}`));
  const { rows } = await sql<{ auto_vacuum: number }>`PRAGMA auto_vacuum`.execute(db);
  if (Number(rows[0]?.auto_vacuum) === 2) return;
  await run(db, ['PRAGMA temp_store = FILE', 'PRAGMA auto_vacuum = INCREMENTAL']);
  try {
    await run(db, ['VACUUM']);
  } finally {
    await run(db, ['PRAGMA temp_store = DEFAULT']);
  }
}
