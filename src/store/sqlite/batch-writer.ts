/**
 * The group commit's writer for SQLite: statements prepared once, one
 * synchronous transaction per batch. Kysely is not in this path: building and preparing an
 * upsert costs more than running it, and this path runs for every check (docs/performance.md).
 *
 * The statements keep the invariants of history-store.ts: a server row carries its latest
 * check (a check at least as new as the row's replaces it), its record, and
 * `clients_24h` = its number of look-up rows, with the trend score in step.
 */
import { checkRow } from '../check-row.js';
import { SCORE_SCALE } from '../ranking.js';
import type { BatchWriter, WriteBatch } from '../write-queue.js';
import type { SqliteConnection } from './binding.js';

const NEWER = 'excluded.last_seen >= servers.last_seen';

export function createSqliteBatchWriter(database: SqliteConnection): BatchWriter {
  const upsertServer = database.prepare(`
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
      trend_score = CASE WHEN ${NEWER} THEN servers.clients_24h * ${SCORE_SCALE} + @playersPart ELSE servers.trend_score END`);
  const insertCheck = database.prepare(`
    INSERT INTO checks (server_id, checked_at, online, players_online, players_max, latency_ms, version)
    VALUES (@serverId, @checkedAt, @online, @checkPlayers, @checkPlayersMax, @latencyMs, @version)`);
  const insertLookup = database.prepare(
    `INSERT INTO lookups (server_id, client_hash, seen_at) VALUES (@server_id, @client_hash, @seen_at)
     ON CONFLICT (server_id, client_hash) DO NOTHING`,
  );
  const touchLookup = database.prepare(
    'UPDATE lookups SET seen_at = @seen_at WHERE server_id = @server_id AND client_hash = @client_hash AND seen_at < @seen_at',
  );
  const addClient = database.prepare(
    `UPDATE servers SET clients_24h = clients_24h + 1, trend_score = trend_score + ${SCORE_SCALE} WHERE id = ?`,
  );
  const expireLookups = database.prepare('DELETE FROM lookups WHERE seen_at < ? RETURNING server_id');
  // Never below zero: a look-up recorded before its server existed is not counted twice.
  const removeClients = database.prepare(`
    UPDATE servers SET
      clients_24h = CASE WHEN clients_24h > @n THEN clients_24h - @n ELSE 0 END,
      trend_score = trend_score + ((CASE WHEN clients_24h > @n THEN clients_24h - @n ELSE 0 END) - clients_24h) * ${SCORE_SCALE}
    WHERE id = @id`);
  const addCounter = database.prepare(
    'INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = counters.value + excluded.value',
  );

  const write = database.transaction((batch: WriteBatch) => {
    for (const check of batch.checks) {
      const row = checkRow(check);
      upsertServer.run(row);
      insertCheck.run(row);
    }
    for (const lookup of batch.lookups) {
      if (insertLookup.run(lookup).changes === 1) addClient.run(lookup.server_id);
      else touchLookup.run(lookup);
    }
    if (batch.expireBefore !== null) {
      const gone = new Map<string, number>();
      for (const { server_id } of expireLookups.all(batch.expireBefore) as { server_id: string }[]) {
        gone.set(server_id, (gone.get(server_id) ?? 0) + 1);
      }
      for (const [id, n] of gone) removeClients.run({ id, n });
    }
    for (const [name, n] of batch.counters) addCounter.run(name, n);
  });
  return (batch) => {
    write.immediate(batch);
  };
}
