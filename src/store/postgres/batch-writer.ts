/**
 * The group commit's writer for PostgreSQL: one transaction per batch, one multi-row
 * statement per table and 500 rows (the server upsert, the checks insert, the hourly and
 * four-hour rows, the look-ups), so a window costs a handful of round trips however many
 * checks it holds.
 *
 * PostgreSQL refuses an upsert that touches one row twice, so the checks of a server within
 * a batch are merged into one server row first, with the same rules a check-by-check write
 * would apply: earliest first_seen, newest check as the latest, highest record.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import { claimBatch } from '../history/batch-ledger.js';
import { checkRow, HOUR_MS, type CheckRow } from '../history/check-row.js';
import { SCORE_SCALE } from '../history/ranking.js';
import type { Database } from '../schema.js';
import type { BatchWriter, BufferedLookup, CounterName, WriteBatch } from '../history/write-queue.js';

/** Rows per statement: well under PostgreSQL's 65,535 parameters. */
const CHUNK = 500;

interface ServerRow {
  latest: CheckRow;
  firstSeen: number;
  record: number;
}

function chunks<T>(items: T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Groups ids by how many times they occur: {delta → ids}, so one UPDATE serves each group. */
function byDelta(ids: string[]): Map<number, string[]> {
  const tally = new Map<string, number>();
  for (const id of ids) tally.set(id, (tally.get(id) ?? 0) + 1);
  const groups = new Map<number, string[]>();
  for (const [id, n] of tally) {
    const group = groups.get(n);
    if (group) group.push(id);
    else groups.set(n, [id]);
  }
  return groups;
}

function mergeServers(rows: CheckRow[]): ServerRow[] {
  const servers = new Map<string, ServerRow>();
  for (const row of rows) {
    const server = servers.get(row.serverId);
    if (!server) {
      servers.set(row.serverId, { latest: row, firstSeen: row.checkedAt, record: row.players });
      continue;
    }
    server.firstSeen = Math.min(server.firstSeen, row.checkedAt);
    server.record = Math.max(server.record, row.players);
    // A later check of the same time wins, as it would written one after the other.
    if (row.checkedAt >= server.latest.checkedAt) server.latest = row;
  }
  return [...servers.values()].sort((a, b) => compareIds(a.latest.serverId, b.latest.serverId));
}

function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Locks the existing rows of these servers, in id order (new rows are inserted in id order). */
async function lockServers(trx: Transaction<Database>, ids: string[]): Promise<void> {
  const sorted = [...new Set(ids)].sort(compareIds);
  for (const chunk of chunks(sorted)) {
    await sql`SELECT id FROM servers WHERE id IN (${sql.join(chunk)}) ORDER BY id FOR UPDATE`.execute(trx);
  }
}

export function createPostgresBatchWriter(db: Kysely<Database>): BatchWriter {
  return (batch: WriteBatch) => inTransaction(db, (trx) => applyBatch(trx, batch));
}

/** Writes one batch within `trx` (its own transaction, or the one that also deletes it where it was held). */
export async function applyBatch(trx: Transaction<Database>, batch: WriteBatch): Promise<void> {
  // Recorded first: a retry of a batch committed already stops here, and one running at the
  // same time as its earlier attempt waits on the id's row instead of writing twice.
  if (!(await claimBatch(trx, batch))) return;
  const rows = batch.checks.map(checkRow);
  // Server rows are locked in id order, whatever order the checks came in: two instances
  // writing batches that share servers then wait for each other instead of deadlocking.
  await lockServers(trx, [...rows.map((r) => r.serverId), ...batch.lookups.map((l) => l.server_id)]);
  const sids = new Map<string, number>();
  for (const chunk of chunks(mergeServers(rows))) await upsertServers(trx, chunk, sids);
  for (const chunk of chunks(rows)) await insertChecks(trx, chunk, sids);
  await writeLookups(trx, batch.lookups);
  if (batch.expireBefore !== null) await expireLookups(trx, batch.expireBefore);
  await writeCounters(trx, batch.counters);
}

/**
 * Runs `work` in a transaction; a failure throws the error that ended it, even when the
 * ROLLBACK after it fails too (the connection is gone): which of the two it is decides
 * whether the write queue holds the batch or counts it refused.
 */
async function inTransaction<T>(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  const trx = await db.startTransaction().execute();
  try {
    const result = await work(trx);
    await trx.commit().execute();
    return result;
  } catch (error) {
    // The connection goes back to the pool either way.
    await trx.rollback().execute().catch(() => {});
    throw error;
  }
}

/** Upserts the server rows and notes the integer key of each in `sids`. */
async function upsertServers(trx: Transaction<Database>, servers: ServerRow[], sids: Map<string, number>): Promise<void> {
  const values = sql.join(
    servers.map(
      ({ latest: r, firstSeen, record }) =>
        sql`(${r.serverId}, ${r.edition}, ${r.host}, ${r.port}, ${firstSeen}, ${r.checkedAt}, ${record}, ${r.online}, ${r.players}, ${r.playersMax}, ${r.playersPart})`,
    ),
  );
  const newer = sql.raw('excluded.last_seen >= servers.last_seen');
  // INSERT … SELECT so that a new server row starts with the look-ups already recorded for
  // it, which keeps clients_24h equal to its number of look-up rows.
  const { rows } = await sql<{ id: string; sid: number }>`
    INSERT INTO servers (id, edition, host, port, first_seen, last_seen, record_players, last_online,
      players_online, players_max, clients_24h, trend_score)
    SELECT v.id, v.edition, v.host, v.port::integer, v.first_seen::bigint, v.last_seen::bigint,
      v.record_players::integer, v.last_online::integer, v.players_online::integer, v.players_max::integer,
      c.n, c.n * ${sql.lit(SCORE_SCALE)} + v.players_part::bigint
    FROM (VALUES ${values}) AS v(id, edition, host, port, first_seen, last_seen, record_players, last_online,
      players_online, players_max, players_part)
    CROSS JOIN LATERAL (SELECT count(*)::integer AS n FROM lookups l WHERE l.server_id = v.id) c
    ON CONFLICT (id) DO UPDATE SET
      first_seen = LEAST(excluded.first_seen, servers.first_seen),
      last_seen = CASE WHEN ${newer} THEN excluded.last_seen ELSE servers.last_seen END,
      record_players = GREATEST(excluded.record_players, servers.record_players),
      last_online = CASE WHEN ${newer} THEN excluded.last_online ELSE servers.last_online END,
      players_online = CASE WHEN ${newer} THEN excluded.players_online ELSE servers.players_online END,
      players_max = CASE WHEN ${newer} THEN excluded.players_max ELSE servers.players_max END,
      trend_score = CASE WHEN ${newer}
        THEN servers.clients_24h * ${sql.lit(SCORE_SCALE)} + (excluded.trend_score - excluded.clients_24h * ${sql.lit(SCORE_SCALE)})
        ELSE servers.trend_score END
    RETURNING id, sid`.execute(trx);
  for (const row of rows) sids.set(row.id, Number(row.sid));
}

/**
 * Inserts the checks (one per server and millisecond: a second one is ignored) and adds those
 * that were new to their hour's and their four hours' rollup rows.
 */
async function insertChecks(trx: Transaction<Database>, rows: CheckRow[], sids: Map<string, number>): Promise<void> {
  if (rows.length === 0) return;
  const inserted = await trx
    .insertInto('checks')
    .values(
      rows.map((r) => ({
        server: sids.get(r.serverId)!,
        checked_at: r.checkedAt,
        online: r.online,
        players_online: r.checkPlayers,
        players_max: r.checkPlayersMax,
        latency_ms: r.latencyMs,
      })),
    )
    .onConflict((oc) => oc.columns(['server', 'checked_at']).doNothing())
    .returning(['server', 'checked_at', 'online', 'players_online'])
    .execute();
  const hours = new Map<string, RollupRow>();
  for (const r of inserted) {
    const players = r.players_online === null ? null : Number(r.players_online);
    addSums(hours, Number(r.server), Math.floor(Number(r.checked_at) / HOUR_MS), {
      checks: 1,
      online: Number(r.online),
      players_n: players === null ? 0 : 1,
      players_sum: players ?? 0,
      players_peak: players,
    });
  }
  // The same sums by four hours: the 30-day history's buckets.
  const fourHours = new Map<string, RollupRow>();
  for (const row of hours.values()) addSums(fourHours, row.server, row.hour - (row.hour % 4), row);
  await addToRollup(trx, 'check_hours', hours.values());
  await addToRollup(trx, 'check_four_hours', fourHours.values());
}

/** An hourly or four-hour row. */
type RollupRow = { server: number; hour: number; checks: number; online: number; players_n: number; players_sum: number; players_peak: number | null };

/** Adds sums to the row of (server, hour) in `rows`. */
function addSums(rows: Map<string, RollupRow>, server: number, hour: number, add: Omit<RollupRow, 'server' | 'hour'>): void {
  const key = `${server}:${hour}`;
  const row = rows.get(key) ?? { server, hour, checks: 0, online: 0, players_n: 0, players_sum: 0, players_peak: null };
  row.checks += add.checks;
  row.online += add.online;
  row.players_n += add.players_n;
  row.players_sum += add.players_sum;
  if (add.players_peak !== null) row.players_peak = Math.max(add.players_peak, row.players_peak ?? -1);
  rows.set(key, row);
}

/** Adds rows to a rollup table's rows, in (server, hour) order. */
async function addToRollup(
  trx: Transaction<Database>,
  table: 'check_hours' | 'check_four_hours',
  rows: Iterable<RollupRow>,
): Promise<void> {
  const ordered = [...rows].sort((a, b) => a.server - b.server || a.hour - b.hour);
  const column = (name: string) => sql.ref(`${table}.${name}`);
  for (const chunk of chunks(ordered)) {
    await trx
      .insertInto(table)
      .values(chunk)
      .onConflict((oc) =>
        oc.columns(['server', 'hour']).doUpdateSet({
          checks: sql`${column('checks')} + excluded.checks`,
          online: sql`${column('online')} + excluded.online`,
          players_n: sql`${column('players_n')} + excluded.players_n`,
          players_sum: sql`${column('players_sum')} + excluded.players_sum`,
          players_peak: sql`GREATEST(${column('players_peak')}, excluded.players_peak)`,
        }),
      )
      .execute();
  }
}

async function writeCounters(trx: Transaction<Database>, counters: Map<CounterName, number>): Promise<void> {
  if (counters.size === 0) return;
  await trx
    .insertInto('counters')
    .values([...counters].map(([name, value]) => ({ name, value })))
    .onConflict((oc) => oc.column('name').doUpdateSet({ value: sql`counters.value + excluded.value` }))
    .execute();
}

async function writeLookups(trx: Transaction<Database>, lookups: BufferedLookup[]): Promise<void> {
  const added: string[] = [];
  const ordered = [...lookups].sort((a, b) => compareIds(a.server_id, b.server_id) || compareIds(a.client_hash, b.client_hash));
  for (const chunk of chunks(ordered)) {
    // Rows that are new raise their server's distinct-client count; rows that exist only
    // get a newer seen_at.
    const inserted = await trx
      .insertInto('lookups')
      .values(chunk)
      .onConflict((oc) => oc.columns(['server_id', 'client_hash']).doNothing())
      .returning(['server_id', 'client_hash'])
      .execute();
    const insertedKeys = new Set(inserted.map((r) => `${r.server_id}\0${r.client_hash}`));
    const existing = chunk.filter((r) => !insertedKeys.has(`${r.server_id}\0${r.client_hash}`));
    if (existing.length > 0) {
      await trx
        .insertInto('lookups')
        .values(existing)
        .onConflict((oc) =>
          oc.columns(['server_id', 'client_hash']).doUpdateSet({
            seen_at: sql`CASE WHEN excluded.seen_at > lookups.seen_at THEN excluded.seen_at ELSE lookups.seen_at END`,
          }),
        )
        .execute();
    }
    for (const row of inserted) added.push(row.server_id);
  }
  await adjustClients(trx, added, +1);
}

async function expireLookups(trx: Transaction<Database>, before: number): Promise<void> {
  const gone = await trx.deleteFrom('lookups').where('seen_at', '<', before).returning('server_id').execute();
  await adjustClients(
    trx,
    gone.map((r) => r.server_id),
    -1,
  );
}

/** Adds (sign +1) or removes (sign -1) distinct clients of servers, keeping the score in step. */
async function adjustClients(trx: Transaction<Database>, serverIds: string[], sign: 1 | -1): Promise<void> {
  await lockServers(trx, serverIds);
  for (const [delta, ids] of byDelta(serverIds)) {
    for (const chunk of chunks(ids)) {
      // Never below zero: a look-up recorded before its server existed is not counted twice.
      const clients =
        sign > 0
          ? sql<number>`clients_24h + ${delta}`
          : sql<number>`CASE WHEN clients_24h > ${delta} THEN clients_24h - ${delta} ELSE 0 END`;
      await trx
        .updateTable('servers')
        .set({
          clients_24h: clients,
          trend_score: sql<number>`trend_score + (${clients} - clients_24h) * ${SCORE_SCALE}`,
        })
        .where('id', 'in', chunk)
        .execute();
    }
  }
}
