/**
 * The /stats body from the database: the all-time counters, servers by their latest check of
 * the last 24 hours (one covering-index range, aggregated without a GROUP BY), and the newest
 * 10 checks. Those are among the checks of the 10 servers checked last (each of the newest 10
 * checks is the latest of a server at least as recent as itself), so they are read from those
 * servers' own ranges of the raw table, never by a scan of it.
 */
import { sql, type Kysely } from 'kysely';
import type { Edition } from '../../core/types.js';
import type { Database, PreviousLayout } from '../schema.js';
import type { RecentCheck, Statistics } from '../types.js';

const STATS_WINDOW_MS = 24 * 60 * 60_000;
const RECENT_CHECKS = 10;

const round2 = (value: number) => Math.round(value * 100) / 100;

/** `previousLayout`: read the layout before migration 0003, while that migration copies the history. */
export async function readStatistics(db: Kysely<Database>, now: number, previousLayout?: PreviousLayout): Promise<Statistics> {
  const counterRows = await db.selectFrom('counters').select(['name', 'value']).execute();
  const counters = new Map(counterRows.map((r) => [r.name, Number(r.value)]));

  const state = await db
    .selectFrom('servers')
    .select((eb) => [
      eb.fn.countAll<number>().as('servers'),
      eb.fn.sum<number>('last_online').as('online'),
      eb.fn.sum<number>(eb.case().when('last_online', '=', 1).then(eb.ref('players_online')).else(0).end()).as('players'),
    ])
    .where('last_seen', '>=', now - STATS_WINDOW_MS)
    .executeTakeFirst();
  const onlineServers = Number(state?.online ?? 0);
  const offlineServers = Number(state?.servers ?? 0) - onlineServers;
  const total = onlineServers + offlineServers;

  return {
    totalRequests: counters.get('totalRequests') ?? 0,
    apiRequests: counters.get('apiRequests') ?? 0,
    serverQueries: counters.get('serverQueries') ?? 0,
    totalChecks: counters.get('totalChecks') ?? 0,
    onlineServers,
    offlineServers,
    activePlayers: Number(state?.players ?? 0),
    onlineRate: total === 0 ? 0 : round2((onlineServers * 100) / total),
    recentChecks: await (previousLayout ? readPreviousRecentChecks(db, previousLayout) : readRecentChecks(db)),
  };
}

async function readRecentChecks(db: Kysely<Database>): Promise<RecentCheck[]> {
  const servers = await db
    .selectFrom('servers')
    .select(['sid', 'host', 'port', 'edition', 'last_seen'])
    .orderBy('last_seen', 'desc')
    .limit(RECENT_CHECKS)
    .execute();
  const perServer = await Promise.all(
    servers.map((server) =>
      db
        .selectFrom('checks')
        .select(['server', 'checked_at', 'online', 'players_online'])
        .where('server', '=', server.sid)
        .orderBy('checked_at', 'desc')
        .limit(RECENT_CHECKS)
        .execute(),
    ),
  );
  const bySid = new Map(servers.map((s) => [Number(s.sid), s]));
  return perServer
    .flat()
    .sort((a, b) => Number(b.checked_at) - Number(a.checked_at) || Number(b.server) - Number(a.server))
    .slice(0, RECENT_CHECKS)
    .map((r) => recentCheck(bySid.get(Number(r.server))!, r));
}

/**
 * The newest checks in the previous layout: those from the time of the tenth newest on, from
 * the end of its index by time (ordered by the joined servers' columns alone, SQLite would sort
 * the whole table); ties in the order of the servers' numbers once copied (SQLite numbers them
 * in the copy's first transaction by first check; PostgreSQL's has numbered them already).
 */
async function readPreviousRecentChecks(db: Kysely<Database>, { checks, key }: PreviousLayout): Promise<RecentCheck[]> {
  const ties = sql.raw(key === 'sid' ? 's.sid DESC' : 's.first_seen DESC, s.id DESC');
  const { rows } = await sql<CheckOf & ServerOf>`SELECT s.host, s.port, s.edition, c.checked_at, c.online, c.players_online
    FROM ${sql.table(checks)} c JOIN servers s ON s.id = c.server_id
    WHERE c.checked_at >= coalesce((SELECT checked_at FROM ${sql.table(checks)} ORDER BY checked_at DESC LIMIT 1 OFFSET ${RECENT_CHECKS - 1}), 0)
    ORDER BY c.checked_at DESC, ${ties} LIMIT ${RECENT_CHECKS}`.execute(db);
  return rows.map((r) => recentCheck(r, r));
}

type ServerOf = { host: string; port: number | string; edition: string };
type CheckOf = { checked_at: number | string; online: number; players_online: number | null };

function recentCheck(server: ServerOf, check: CheckOf): RecentCheck {
  return {
    hostname: server.host,
    port: Number(server.port),
    edition: server.edition as Edition,
    online: Number(check.online) === 1,
    players: check.players_online === null ? null : Number(check.players_online),
    checked_at: new Date(Number(check.checked_at)).toISOString(),
  };
}
