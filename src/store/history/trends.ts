/**
 * /trends pages: cut from a ranking snapshot (ranking-snapshots.ts), or past a snapshot's end
 * by score and id from the `servers_ranking` index, which yields fresh online servers in
 * ranking order. Either way a page reads O(page) rows besides its snapshot, whose size is
 * bounded, and the uptime of its servers comes from the hourly rows of the last 7 days.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { serverAddress, type Edition } from '../../core/types.js';
import { HOUR_MS } from './check-row.js';
import { InvalidCursorError } from '../errors.js';
import { scoreValue } from './ranking.js';
import { RankingSnapshot, RankingSnapshots, SNAPSHOT_SERVERS, type CursorPlace, type RankedServer } from './ranking-snapshots.js';
import type { Database, PreviousLayout } from '../schema.js';
import type { TrendPage, TrendServer } from '../types.js';

const MINUTE = 60_000;
/** /trends lists servers whose latest check is online and younger than this. */
const TREND_FRESHNESS_MS = 30 * MINUTE;
/** Uptime is the share of online checks in the hourly rows of the last 7 days (this hour included). */
const UPTIME_HOURS = 7 * 24;

export interface TrendReaderDeps {
  db: Kysely<Database>;
  /** Wall-clock time (freshness, uptime window). */
  now: () => number;
  /** Monotonic time (snapshot and cursor lifetimes). */
  elapsed: () => number;
  /** The write queue's version, and a write of what it holds (before a snapshot is read). */
  version: () => number;
  flushQueued: () => Promise<void>;
  /**
   * Read the layout before migration 0003, while that migration copies the history: servers
   * keyed as that layout keys them, uptime summed from its raw checks.
   */
  previousLayout?: PreviousLayout;
}

const round2 = (value: number) => Math.round(value * 100) / 100;

type PageCache = (read: () => Promise<TrendServer[]>) => Promise<TrendServer[]>;

/** Pages whose items a snapshot keeps: the few a front page and its clients ask for. */
const PAGES_PER_SNAPSHOT = 16;

export class TrendReader {
  private readonly rankings: RankingSnapshots;
  /** Items of pages read from each snapshot, let go with the snapshot. */
  private readonly pages = new WeakMap<RankingSnapshot, Map<string, Promise<TrendServer[]>>>();

  /** A server's numeric key: its `sid`, or the previous layout's key. */
  private readonly key: RawBuilder<number>;

  constructor(private readonly deps: TrendReaderDeps) {
    this.key = sql<number>`${sql.raw(deps.previousLayout?.key ?? 'sid')}`;
    this.rankings = new RankingSnapshots((version) => this.takeSnapshot(version), deps.version);
  }

  async page(limit: number, cursor: string | null): Promise<TrendPage> {
    const start = await this.startOf(cursor);
    if ('score' in start) return this.livePage(limit, start.score, start.id);
    const { snapshot, from } = start;
    const head = snapshot.servers.slice(from, from + limit);
    if (from + limit <= snapshot.servers.length || snapshot.complete) {
      const hasNext = from + limit < snapshot.servers.length || !snapshot.complete;
      return this.answer(head, hasNext, { snapshot }, this.pageCache(snapshot, `${from}:${limit}`));
    }
    // The page runs past the end of a snapshot that is not the whole ranking: the ranking as
    // it is now goes on after the snapshot's last server.
    const last = snapshot.servers[snapshot.servers.length - 1]!;
    const wanted = limit - head.length;
    const tail = await this.readAfter(last.score, last.id, wanted + 1);
    const servers = head.concat(tail.slice(0, wanted));
    const end = servers[servers.length - 1];
    return this.answer(servers, tail.length > wanted, tail.length === 0 || !end ? { snapshot } : { score: end.score });
  }

  /** Where a page starts: in a snapshot, or after a score and id in the ranking as it is now. */
  private async startOf(cursor: string | null): Promise<{ snapshot: RankingSnapshot; from: number } | { score: number; id: string }> {
    const now = this.deps.elapsed();
    if (cursor === null) return { snapshot: await this.rankings.current(now), from: 0 };
    const issued = this.rankings.issuedAt(cursor, now);
    if (issued && 'score' in issued) return { score: issued.score, id: cursor };
    if (issued) return { snapshot: issued.snapshot, from: issued.snapshot.after(cursor)! };
    const snapshot = await this.rankings.current(now);
    const from = snapshot.after(cursor);
    if (from !== null) return { snapshot, from };
    // A cursor the store does not remember: where its server's current score places it.
    const score = await this.scoreOf(cursor);
    const place = snapshot.afterPlace(score, cursor);
    if (place === snapshot.servers.length && !snapshot.complete) return { score, id: cursor };
    return { snapshot, from: place };
  }

  /** A page of the ranking as it is now, after a server of `score` and `id`. */
  private async livePage(limit: number, score: number, id: string): Promise<TrendPage> {
    const rows = await this.readAfter(score, id, limit + 1);
    const servers = rows.slice(0, limit);
    const end = servers[servers.length - 1];
    return this.answer(servers, rows.length > limit, { score: end?.score ?? score });
  }

  /** The page, its cursor remembered with where it stands; its items read once per snapshot when `cache` is given. */
  private async answer(servers: RankedServer[], hasNext: boolean, place: CursorPlace, cache?: PageCache): Promise<TrendPage> {
    const last = servers[servers.length - 1];
    const nextCursor = hasNext && last ? last.id : null;
    if (nextCursor !== null) this.rankings.issue(nextCursor, place, this.deps.elapsed());
    return { data: await (cache ? cache(() => this.items(servers)) : this.items(servers)), hasNext: nextCursor !== null, nextCursor };
  }

  /**
   * The items of one page of a snapshot, read once while the snapshot serves (a second at
   * most, or until a check lands): every client asking for the same first page meanwhile
   * shares them. Bounded per snapshot; a failed read is not kept.
   */
  private pageCache(snapshot: RankingSnapshot, key: string): PageCache {
    let pages = this.pages.get(snapshot);
    if (!pages) this.pages.set(snapshot, (pages = new Map()));
    const kept = pages;
    return (read) => {
      const known = kept.get(key);
      if (known) return known;
      const items = read();
      if (kept.size < PAGES_PER_SNAPSHOT) {
        kept.set(key, items);
        items.catch(() => kept.delete(key));
      }
      return items;
    };
  }

  private async scoreOf(cursor: string): Promise<number> {
    const row = await this.deps.db.selectFrom('servers').select('trend_score').where('id', '=', cursor).executeTakeFirst();
    if (!row) throw new InvalidCursorError();
    return Number(row.trend_score);
  }

  /** Writes the queued rows (a check counts in the ranking as soon as it is made), then reads the head. */
  private async takeSnapshot(version: number): Promise<RankingSnapshot> {
    await this.deps.flushQueued();
    const rows = await this.ranked().limit(SNAPSHOT_SERVERS + 1).execute();
    const servers = rows.slice(0, SNAPSHOT_SERVERS).map(rankedServer);
    return new RankingSnapshot(this.deps.elapsed(), version, servers, rows.length <= SNAPSHOT_SERVERS);
  }

  private async readAfter(score: number, id: string, count: number): Promise<RankedServer[]> {
    const rows = await this.ranked()
      .where('trend_score', '<=', score)
      .where((eb) => eb.or([eb('trend_score', '<', score), eb('id', '>', id)]))
      .limit(count)
      .execute();
    return rows.map(rankedServer);
  }

  /** Fresh online servers in ranking order, from the servers_ranking index alone. */
  private ranked() {
    return (
      this.deps.db
        .selectFrom('servers')
        .select([this.key.as('sid'), 'id', 'trend_score'])
        .where('last_online', '=', 1)
        // Unary plus keeps this term away from servers_last_seen: the planner would otherwise
        // range over every fresh server and sort them, where servers_ranking reads them in
        // order and checks freshness from its own last_seen column.
        .where(sql<number>`+${sql.ref('last_seen')}`, '>=', this.deps.now() - TREND_FRESHNESS_MS)
        .orderBy('trend_score', 'desc')
        .orderBy('id', 'asc')
    );
  }

  /** The page's items: their rows and uptime read by key, in the page's order, with the score it was ranked by. */
  private async items(servers: RankedServer[]): Promise<TrendServer[]> {
    if (servers.length === 0) return [];
    const sids = servers.map((s) => s.sid);
    const [rows, uptime] = await Promise.all([
      this.deps.db
        .selectFrom('servers')
        .select([this.key.as('sid'), 'edition', 'host', 'port', 'last_seen', 'players_online', 'players_max', 'record_players'])
        .where(this.key, 'in', sids)
        .execute(),
      this.uptimeOf(sids),
    ]);
    const bySid = new Map(rows.map((r) => [Number(r.sid), r]));
    // A server forgotten since its snapshot was taken has no row left: it is left out.
    return servers.flatMap((s) => {
      const row = bySid.get(s.sid);
      return row ? [trendServer(s, row, uptime.get(s.sid) ?? 0)] : [];
    });
  }

  /** Share of checks online in the uptime window, per server, in percent (2 decimals). */
  private async uptimeOf(sids: number[]): Promise<Map<number, number>> {
    const uptime = new Map<number, number>();
    if (sids.length === 0) return uptime;
    const from = Math.floor(this.deps.now() / HOUR_MS) - (UPTIME_HOURS - 1);
    const previous = this.deps.previousLayout;
    const sums = previous
      ? (
          await sql<{ server: number; total: number; up: number }>`SELECT s.${sql.raw(previous.key)} AS server, count(*) AS total, sum(c.online) AS up
            FROM servers s JOIN ${sql.table(previous.checks)} c ON c.server_id = s.id
            WHERE s.${sql.raw(previous.key)} IN (${sql.join(sids)}) AND c.checked_at >= ${from * HOUR_MS} GROUP BY s.${sql.raw(previous.key)}`.execute(this.deps.db)
        ).rows
      : await this.deps.db
          .selectFrom('check_hours')
          .select((eb) => ['server', eb.fn.sum<number>('checks').as('total'), eb.fn.sum<number>('online').as('up')])
          .where('server', 'in', sids)
          .where('hour', '>=', from)
          .groupBy('server')
          .execute();
    for (const s of sums) {
      const total = Number(s.total);
      uptime.set(Number(s.server), total === 0 ? 0 : round2((Number(s.up) * 100) / total));
    }
    return uptime;
  }
}

type ServerRow = Pick<Database['servers'], 'edition' | 'host' | 'port' | 'last_seen' | 'players_online' | 'players_max' | 'record_players'>;

function rankedServer(r: { sid: number; id: string; trend_score: number }): RankedServer {
  return { sid: Number(r.sid), id: r.id, score: Number(r.trend_score) };
}

/** A ranked server as a /trends item. */
function trendServer(ranked: RankedServer, r: ServerRow, uptimePercentage: number): TrendServer {
  const edition = r.edition as Edition;
  const port = Number(r.port);
  return {
    server_id: ranked.id,
    hostname: r.host,
    address: serverAddress(edition, r.host, port),
    port,
    edition,
    trend_score: scoreValue(ranked.score),
    is_online: true,
    stale: false,
    checked_at: new Date(Number(r.last_seen)).toISOString(),
    players_online: Number(r.players_online),
    players_max: Number(r.players_max),
    record_players: Number(r.record_players),
    uptime_percentage: uptimePercentage,
  };
}
