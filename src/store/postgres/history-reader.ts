/**
 * A server's history on PostgreSQL (uptime-history.ts): the database sums the rows by bucket,
 * reading them from the tables' primary keys (which include the columns summed).
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema.js';
import { addToBucket, bucketWindow, emptySums, historySource, serverHistory, type HistoryReader } from '../uptime-history.js';

/** At most a row per bucket comes back, whatever the range holds. */
export function kyselyHistoryReader(db: Kysely<Database>): HistoryReader {
  return async (serverId, range, now) => {
    const server = await db.selectFrom('servers').select(['sid', 'id', 'host', 'port', 'edition']).where('id', '=', serverId).executeTakeFirst();
    if (!server) return null;
    const window = bucketWindow(range, now);
    const source = historySource(window);
    const sums = emptySums(window.count);
    const rows = source.table === 'checks' ? await rawSums(db, Number(server.sid), source) : await hourlySums(db, Number(server.sid), source);
    for (const r of rows) {
      addToBucket(sums, Number(r.bucket), Number(r.checks), Number(r.online), Number(r.players_n), Number(r.players_sum ?? 0), r.players_max === null ? null : Number(r.players_max));
    }
    return serverHistory(server, range, window, sums);
  };
}

type Source = ReturnType<typeof historySource>;

function rawSums(db: Kysely<Database>, sid: number, source: Source) {
  const onlinePlayers = sql`CASE WHEN ${sql.ref('online')} = 1 THEN ${sql.ref('players_online')} END`;
  return db
    .selectFrom('checks')
    .select((eb) => [
      sql<number>`(${sql.ref('checked_at')} - ${source.from}) / ${source.per}`.as('bucket'),
      eb.fn.countAll<number>().as('checks'),
      eb.fn.sum<number>('online').as('online'),
      sql<number>`COUNT(${onlinePlayers})`.as('players_n'),
      sql<number | null>`SUM(${onlinePlayers})`.as('players_sum'),
      sql<number | null>`MAX(${onlinePlayers})`.as('players_max'),
    ])
    .where('server', '=', sid)
    .where('checked_at', '>=', source.from)
    .where('checked_at', '<', source.until)
    .groupBy(sql`1`)
    .execute();
}

function hourlySums(db: Kysely<Database>, sid: number, source: Source) {
  return db
    .selectFrom('check_hours')
    .select((eb) => [
      sql<number>`(${sql.ref('hour')} - ${source.from}) / ${source.per}`.as('bucket'),
      eb.fn.sum<number>('checks').as('checks'),
      eb.fn.sum<number>('online').as('online'),
      eb.fn.sum<number>('players_n').as('players_n'),
      eb.fn.sum<number>('players_sum').as('players_sum'),
      eb.fn.max('players_peak').as('players_max'),
    ])
    .where('server', '=', sid)
    .where('hour', '>=', source.from)
    .where('hour', '<', source.until)
    .groupBy(sql`1`)
    .execute();
}
