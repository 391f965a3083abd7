/**
 * The group commit's writer for SQLite, run in the store's worker thread: statements
 * prepared once, one transaction per batch (the thread's runTransaction). Kysely is not in
 * this path: building and preparing an upsert costs more than running it, and this path runs
 * for every check.
 *
 * The statements keep the invariants of history-store.ts: a server row carries its latest
 * check (a check at least as new as the row's replaces it), its record, and
 * `clients_24h` = its number of look-up rows, with the trend score in step. A check new to
 * the raw table (one per server and millisecond) adds to its hour's rollup row.
 */
import { checkRow } from '../history/check-row.js';
import { SCORE_SCALE } from '../history/ranking.js';
import type { WriteBatch } from '../history/write-queue.js';
import { sqliteBatchClaim } from './batch-claim.js';
import type { SqliteConnection } from './binding.js';
import type { RunTransaction } from './transaction.js';

const NEWER = 'excluded.last_seen >= servers.last_seen';

function serverStatements(database: SqliteConnection) {
  return {
    // Read with get(), one step (all() builds an iterator: 7 µs more an upsert on libsql).
    upsert: database.prepare(`
      INSERT INTO servers (id, edition, host, port, first_seen, last_seen, record_players, last_online,
        players_online, players_max, clients_24h, trend_score)
      VALUES (@serverId, @edition, @host, @port, @checkedAt, @checkedAt, @players, @online, @players, @playersMax,
        (SELECT count(*) FROM lookups WHERE server_id = @serverId),
        (SELECT count(*) FROM lookups WHERE server_id = @serverId) * ${SCORE_SCALE} + @playersPart)
      ON CONFLICT (id) DO UPDATE SET
        first_seen = CASE WHEN excluded.first_seen < servers.first_seen THEN excluded.first_seen ELSE servers.first_seen END,
        last_seen = CASE WHEN ${NEWER} THEN excluded.last_seen ELSE servers.last_seen END,
        record_players = CASE WHEN excluded.record_players > servers.record_players THEN excluded.record_players ELSE servers.record_players END,
        last_online = CASE WHEN ${NEWER} THEN excluded.last_online ELSE servers.last_online END,
        players_online = CASE WHEN ${NEWER} THEN excluded.players_online ELSE servers.players_online END,
        players_max = CASE WHEN ${NEWER} THEN excluded.players_max ELSE servers.players_max END,
        trend_score = CASE WHEN ${NEWER} THEN servers.clients_24h * ${SCORE_SCALE} + @playersPart ELSE servers.trend_score END
      RETURNING sid`),
    insertCheck: database.prepare(`
      INSERT INTO checks (server, checked_at, online, players_online, players_max, latency_ms)
      VALUES (@sid, @checkedAt, @online, @checkPlayers, @checkPlayersMax, @latencyMs)
      ON CONFLICT (server, checked_at) DO NOTHING`),
    addToHour: database.prepare(`
      INSERT INTO check_hours (server, hour, checks, online, players_n, players_sum, players_peak)
      VALUES (@sid, @hour, 1, @online, @playersN, @playersSum, @checkPlayers)
      ON CONFLICT (server, hour) DO UPDATE SET
        checks = check_hours.checks + 1,
        online = check_hours.online + excluded.online,
        players_n = check_hours.players_n + excluded.players_n,
        players_sum = check_hours.players_sum + excluded.players_sum,
        players_peak = CASE WHEN excluded.players_peak > coalesce(check_hours.players_peak, -1)
          THEN excluded.players_peak ELSE check_hours.players_peak END`),
  };
}

function lookupStatements(database: SqliteConnection) {
  return {
    insert: database.prepare(
      `INSERT INTO lookups (server_id, client_hash, seen_at) VALUES (@server_id, @client_hash, @seen_at)
       ON CONFLICT (server_id, client_hash) DO NOTHING`,
    ),
    touch: database.prepare(
      'UPDATE lookups SET seen_at = @seen_at WHERE server_id = @server_id AND client_hash = @client_hash AND seen_at < @seen_at',
    ),
    addClient: database.prepare(`UPDATE servers SET clients_24h = clients_24h + 1, trend_score = trend_score + ${SCORE_SCALE} WHERE id = ?`),
    expire: database.prepare('DELETE FROM lookups WHERE seen_at < ? RETURNING server_id').pluck(),
    // Never below zero: a look-up recorded before its server existed is not counted twice.
    removeClients: database.prepare(`
      UPDATE servers SET
        clients_24h = CASE WHEN clients_24h > @n THEN clients_24h - @n ELSE 0 END,
        trend_score = trend_score + ((CASE WHEN clients_24h > @n THEN clients_24h - @n ELSE 0 END) - clients_24h) * ${SCORE_SCALE}
      WHERE id = @id`),
  };
}

/** Writes one batch in one transaction, or none of it. */
export function createSqliteBatchWriter(database: SqliteConnection, runTransaction: RunTransaction): (batch: WriteBatch) => Promise<void> {
  let write: ((batch: WriteBatch) => void) | null = null;
  return async (batch) => {
    try {
      await runTransaction(() => (write ??= prepareBatch(database))(batch));
    } catch (error) {
      // libsql leaves a statement whose get() failed failing at every later call: the next
      // batch gets statements prepared anew (then, so that this batch's error is the one thrown).
      write = null;
      throw error;
    }
  };
}

/** The statements of a batch, prepared once, and the function that runs them inside a transaction. */
function prepareBatch(database: SqliteConnection): (batch: WriteBatch) => void {
  const servers = serverStatements(database);
  const lookups = lookupStatements(database);
  const addCounter = database.prepare(
    'INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = counters.value + excluded.value',
  );

  const claim = sqliteBatchClaim(database);

  return (batch) => {
    // A retry of a batch committed already (its answer lost with the worker) changes nothing.
    if (!claim(batch)) return;
    for (const check of batch.checks) {
      const row = checkRow(check);
      const { sid } = servers.upsert.get(row) as { sid: number };
      const inserted = servers.insertCheck.run({
        sid,
        checkedAt: row.checkedAt,
        online: row.online,
        checkPlayers: row.checkPlayers,
        checkPlayersMax: row.checkPlayersMax,
        latencyMs: row.latencyMs,
      });
      if (inserted.changes === 1) {
        servers.addToHour.run({
          sid,
          hour: row.hour,
          online: row.online,
          playersN: row.checkPlayers === null ? 0 : 1,
          playersSum: row.checkPlayers ?? 0,
          checkPlayers: row.checkPlayers,
        });
      }
    }
    for (const lookup of batch.lookups) {
      if (lookups.insert.run(lookup).changes === 1) lookups.addClient.run(lookup.server_id);
      else lookups.touch.run(lookup);
    }
    if (batch.expireBefore !== null) {
      const gone = new Map<string, number>();
      for (const id of lookups.expire.all(batch.expireBefore) as string[]) gone.set(id, (gone.get(id) ?? 0) + 1);
      for (const [id, n] of gone) lookups.removeClients.run({ id, n });
    }
    for (const [name, n] of batch.counters) addCounter.run(name, n);
  };
}
