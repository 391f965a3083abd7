/**
 * The Store over Kysely, one implementation for SQLite and PostgreSQL (the SQL is portable:
 * ON CONFLICT upserts, RETURNING, CASE instead of MAX/GREATEST).
 *
 * Hot paths and how they stay cheap:
 * - recordCheck, count, recordLookup: queued (write-queue.ts) and group-committed, one
 *   transaction per 50 ms or 500 rows: an upsert of the server row (which carries the latest
 *   check, the record and the trend score) and an insert into checks per check; counters and
 *   look-ups in the same transaction. Never one write per request, never a wait for one.
 * - reads (trends, stats) have a 1 s deadline and fall back to their last good answer
 *   (read-fallback.ts).
 * - trends: pages are cut from a ranking snapshot (ranking-snapshots.ts), one walk of the
 *   `servers_ranking` index taken when checks or look-ups were recorded since the last one
 *   (or it is a second old); uptime is summed for the page's ids only.
 * - stats: one covering-index range over servers seen in 24 hours, the counters, and the
 *   newest 10 checks; computed at most once per 60 s.
 */
import { createHash } from 'node:crypto';
import DataLoader from 'dataloader';
import { Migrator, sql, type Kysely } from 'kysely';
import type { Clock } from '../core/clock.js';
import { serverAddress, type Edition } from '../core/types.js';
import { InvalidCursorError } from './errors.js';
import { migrationProvider } from './migrations.js';
import { scoreValue } from './ranking.js';
import { RankingSnapshot, RankingSnapshots, type RankedServer } from './ranking-snapshots.js';
import { ReadFallback } from './read-fallback.js';
import type { Database, Dialect } from './schema.js';
import type { CheckRecord, CounterIncrements, HistoryStore, Statistics, StoreHealth, TrendPage, TrendServer } from './types.js';
import { readServerHistory, type HistoryRange, type ServerHistory } from './uptime-history.js';
import { WriteQueue, type BatchWriter, type WriteQueueOptions } from './write-queue.js';
import type { SqliteBindingName } from './sqlite/binding.js';
import { WatchStore } from './watch-store.js';

export interface StoreOptions {
  /** How long a computed /stats stays in memory (default 60 s, as long as its HTTP cache). */
  statsCacheMs?: number;
  /** Group commit: window, rows per window, buffer bound (HISTORY_BUFFER_MAX), retry backoff. */
  writes?: Omit<WriteQueueOptions, 'onError' | 'now'>;
  /** Deadline of a /trends or /stats read before the last good answer is served (default 1000 ms). */
  readDeadlineMs?: number;
  /** Retention pruning interval (default 1 h; it also runs at start). */
  pruneIntervalMs?: number;
  /** Failures of background work (flush timer, pruning, idle pool clients). */
  onError?: (error: unknown) => void;
  /** The SQLite binding (default: the one this install has; benchmarks compare both). */
  sqliteBinding?: SqliteBindingName;
}

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
/** /trends lists servers whose latest check is online and younger than this. */
const TREND_FRESHNESS_MS = 30 * MINUTE;
const UPTIME_WINDOW_MS = 7 * DAY;
/** Distinct clients are counted over this window; older look-up rows are deleted. */
const LOOKUP_WINDOW_MS = DAY;
const STATS_WINDOW_MS = DAY;
/** Look-ups older than the window are deleted this often (in a group-commit transaction). */
const EXPIRY_INTERVAL_MS = MINUTE;
const PRUNE_BATCH = 10_000;

/** Without an onError option, a failed flush or prune is at least not silent. */
export function reportBackgroundError(error: unknown): void {
  process.emitWarning(error instanceof Error ? error : String(error), { code: 'OBSERVER_STORE' });
}

export { serverAddress };

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}

/** Ids read in one query at most by knowsServer (far below either database's parameter limit). */
const KNOWN_SERVERS_PER_READ = 500;

export class KyselyHistoryStore implements HistoryStore {
  private readonly queue: WriteQueue;
  private readonly reads: ReadFallback;
  private readonly rankings: RankingSnapshots;
  private statsCache: { at: number; value: Promise<Statistics> } | null = null;
  private timers: NodeJS.Timeout[] = [];
  private pruning: Promise<void> | null = null;
  private closing: Promise<void> | null = null;
  /** Run on close after the last write, before the database is let go (a checkpoint worker's stop). */
  private readonly closeSteps: Array<() => Promise<void>> = [];
  /**
   * Whether servers are in the store, asked together: the ids asked for within one turn of the
   * event loop are read in one query (a look-up of a new name asks for each).
   */
  private readonly serversKnown = new DataLoader<string, boolean>(
    async (ids) => {
      const rows = await this.db.selectFrom('servers').select('id').where('id', 'in', ids).execute();
      const found = new Set(rows.map((row) => row.id));
      return ids.map((id) => found.has(id));
    },
    { cache: false, maxBatchSize: KNOWN_SERVERS_PER_READ, batchScheduleFn: (read) => setImmediate(read) },
  );
  private readonly statsCacheMs: number;
  private readonly onError: (error: unknown) => void;
  /** Watches, their events and delivery log (watch-store.ts). */
  readonly watches: WatchStore;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    private readonly retentionDays: number,
    private readonly clock: Clock,
    writer: BatchWriter,
    private readonly options: StoreOptions = {},
  ) {
    this.statsCacheMs = options.statsCacheMs ?? MINUTE;
    this.onError = options.onError ?? reportBackgroundError;
    this.watches = new WatchStore(db);
    this.queue = new WriteQueue(writer, { ...options.writes, onError: this.onError });
    this.reads = new ReadFallback({ deadlineMs: options.readDeadlineMs ?? 1000 });
    this.rankings = new RankingSnapshots(
      (version) => this.takeRanking(version),
      () => this.queue.version,
    );
  }

  /** Starts the expiry and prune timers (unref'd: they never keep the process alive). */
  start(): void {
    const expire = setInterval(() => {
      this.queue.expire(this.clock.now() - LOOKUP_WINDOW_MS);
    }, EXPIRY_INTERVAL_MS);
    const prune = setInterval(() => {
      this.prune().catch(this.onError);
    }, this.options.pruneIntervalMs ?? 60 * MINUTE);
    expire.unref();
    prune.unref();
    this.timers.push(expire, prune);
  }

  async migrate(): Promise<void> {
    const migrator = new Migrator({ db: this.db, provider: migrationProvider(this.dialect) });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error instanceof Error ? error : new Error(`migration failed: ${String(error)}`);
  }

  recordCheck(check: CheckRecord): void {
    this.queue.enqueueCheck(check);
  }

  count(increments: CounterIncrements): void {
    this.queue.enqueueCounts(increments);
  }

  recordLookup(serverId: string, clientKey: string): void {
    // Hashed again with the server id: the rows of one client under different servers
    // cannot be linked to each other, nor to the key the caller (or a rate limiter) used.
    const clientHash = createHash('sha256').update(serverId).update('\0').update(clientKey).digest('base64url').slice(0, 22);
    this.queue.enqueueLookup({ server_id: serverId, client_hash: clientHash, seen_at: this.clock.now() });
  }

  knowsServer(serverId: string): Promise<boolean> {
    return this.serversKnown.load(serverId);
  }

  health(): StoreHealth {
    return this.queue.health();
  }

  /** Writes everything queued now, expiring look-ups older than 24 hours on the way. */
  async flush(): Promise<void> {
    this.queue.expire(this.clock.now() - LOOKUP_WINDOW_MS);
    await this.queue.drain();
  }

  trends(limit: number, cursor: string | null): Promise<TrendPage> {
    return this.reads.read(`trends:${limit}:${cursor ?? ''}`, () => this.readTrends(limit, cursor));
  }

  private async readTrends(limit: number, cursor: string | null): Promise<TrendPage> {
    const now = this.clock.now();
    const ranking = (cursor === null ? null : this.rankings.issuedWith(cursor, now)) ?? (await this.rankings.current(now));
    const from = cursor === null ? 0 : (ranking.after(cursor) ?? (await this.placeOf(cursor, ranking)));
    const page = ranking.servers.slice(from, from + limit);
    const uptime = await this.uptimeOf(page.map((r) => r.id), now);
    const data = page.map((r) => trendServer(r, uptime.get(r.id) ?? 0));
    const hasNext = from + limit < ranking.servers.length;
    const nextCursor = hasNext ? page[page.length - 1]!.id : null;
    if (nextCursor !== null) this.rankings.issue(nextCursor, ranking, now);
    return { data, hasNext, nextCursor };
  }

  /** Where a cursor server that is not in `ranking` would stand in it, by its current score. */
  private async placeOf(cursor: string, ranking: RankingSnapshot): Promise<number> {
    const row = await this.db.selectFrom('servers').select('trend_score').where('id', '=', cursor).executeTakeFirst();
    if (!row) throw new InvalidCursorError();
    return ranking.afterPlace(Number(row.trend_score), cursor);
  }

  /**
   * Writes the queued rows (a check counts in the ranking as soon as it is made), then reads
   * the whole ranking in one statement.
   */
  private async takeRanking(version: number): Promise<RankingSnapshot> {
    if (this.queue.holdsRows) await this.queue.flushOnce();
    const now = this.clock.now();
    const rows = await this.db
      .selectFrom('servers')
      .select([
        'id',
        'edition',
        'host',
        'port',
        'last_seen',
        'players_online',
        'players_max',
        'record_players',
        'trend_score',
      ])
      .where('last_online', '=', 1)
      // Unary plus keeps this term away from servers_last_seen: the planner would otherwise
      // range over every fresh server and sort them, where servers_ranking reads them in
      // order and checks freshness from its own last_seen column.
      .where(sql<number>`+${sql.ref('last_seen')}`, '>=', now - TREND_FRESHNESS_MS)
      .orderBy('trend_score', 'desc')
      .orderBy('id', 'asc')
      .execute();
    const servers: RankedServer[] = rows.map((r) => ({
      id: r.id,
      edition: r.edition as Edition,
      host: r.host,
      port: Number(r.port),
      lastSeen: Number(r.last_seen),
      playersOnline: Number(r.players_online),
      playersMax: Number(r.players_max),
      recordPlayers: Number(r.record_players),
      score: Number(r.trend_score),
    }));
    return new RankingSnapshot(now, version, servers);
  }

  /** Share of checks online over the uptime window, per server, in percent (2 decimals). */
  private async uptimeOf(ids: string[], now: number): Promise<Map<string, number>> {
    const uptime = new Map<string, number>();
    if (ids.length === 0) return uptime;
    const sums = await this.db
      .selectFrom('checks')
      .select((eb) => ['server_id', eb.fn.countAll<number>().as('total'), eb.fn.sum<number>('online').as('up')])
      .where('server_id', 'in', ids)
      .where('checked_at', '>=', now - UPTIME_WINDOW_MS)
      .groupBy('server_id')
      .execute();
    for (const s of sums) {
      const total = Number(s.total);
      uptime.set(s.server_id, total === 0 ? 0 : round2((Number(s.up) * 100) / total));
    }
    return uptime;
  }

  stats(): Promise<Statistics> {
    const now = this.clock.now();
    if (this.statsCache && now - this.statsCache.at < this.statsCacheMs) return this.statsCache.value;
    const value = this.reads.read('stats', () => this.computeStats(now));
    const entry = { at: now, value };
    this.statsCache = entry;
    // A failure or a stale answer is not cached: the next call tries again.
    value.then(
      (stats: Statistics) => {
        if (stats.stale && this.statsCache === entry) this.statsCache = null;
      },
      () => {
        if (this.statsCache === entry) this.statsCache = null;
      },
    );
    return value;
  }

  private async computeStats(now: number): Promise<Statistics> {
    // The counters include the requests still queued. This write happens at most once per
    // stats computation, i.e. once a minute, not once per request.
    await this.queue.flushOnce();
    const counterRows = await this.db.selectFrom('counters').select(['name', 'value']).execute();
    const counters = new Map(counterRows.map((r) => [r.name, Number(r.value)]));

    // One range of servers_last_seen, aggregated without a GROUP BY (no temporary B-tree).
    const state = await this.db
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
    const activePlayers = Number(state?.players ?? 0);
    const total = onlineServers + offlineServers;

    const recent = await this.db
      .selectFrom('checks')
      .innerJoin('servers', 'servers.id', 'checks.server_id')
      .select([
        'servers.host',
        'servers.port',
        'servers.edition',
        'checks.online',
        'checks.players_online',
        'checks.checked_at',
      ])
      .orderBy('checks.checked_at', 'desc')
      .orderBy('checks.id', 'desc')
      .limit(10)
      .execute();

    return {
      totalRequests: counters.get('totalRequests') ?? 0,
      apiRequests: counters.get('apiRequests') ?? 0,
      serverQueries: counters.get('serverQueries') ?? 0,
      totalChecks: counters.get('totalChecks') ?? 0,
      onlineServers,
      offlineServers,
      activePlayers,
      onlineRate: total === 0 ? 0 : round2((onlineServers * 100) / total),
      recentChecks: recent.map((r) => ({
        hostname: r.host,
        port: Number(r.port),
        edition: r.edition as Edition,
        online: Number(r.online) === 1,
        players: r.players_online === null ? null : Number(r.players_online),
        checked_at: new Date(Number(r.checked_at)).toISOString(),
      })),
    };
  }

  /** With the reads' deadline and fallback: the last good answer marked stale, or 503. Counts queued checks too. */
  async history(serverId: string, range: HistoryRange): Promise<ServerHistory | null> {
    const answer = await this.reads.read(`history:${serverId}:${range}`, async () => {
      // A check of this server still waiting for its group commit (up to 50 ms) is written
      // first: the page that has just looked a server up asks for its history next. One write
      // per such check at most, never one per request.
      if (this.queue.holdsCheck(serverId)) await this.queue.flushOnce();
      return { history: await readServerHistory(this.db, serverId, range, this.clock.now()) };
    });
    if (answer.history === null) return null;
    return answer.stale ? { ...answer.history, stale: true } : answer.history;
  }

  prune(): Promise<void> {
    // One pruning at a time; a call during a run shares it.
    this.pruning ??= this.pruneOnce().finally(() => {
      this.pruning = null;
    });
    return this.pruning;
  }

  private async pruneOnce(): Promise<void> {
    const cutoff = this.clock.now() - this.retentionDays * DAY;
    // In batches, so that SQLite's single writer is never held for long.
    for (;;) {
      const result = await this.db
        .deleteFrom('checks')
        .where('id', 'in', (eb) =>
          eb.selectFrom('checks').select('id').where('checked_at', '<', cutoff).limit(PRUNE_BATCH),
        )
        .executeTakeFirst();
      if (Number(result.numDeletedRows) < PRUNE_BATCH) break;
    }
    // A server not checked within the retention has no checks left: forget it too, so that
    // the table stays bounded however many distinct addresses are looked up.
    await this.db.deleteFrom('servers').where('last_seen', '<', cutoff).execute();
  }

  /** Adds a step to close(): after the last write, before the database is let go. */
  onClose(step: () => Promise<void>): void {
    this.closeSteps.push(step);
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const timer of this.timers) clearInterval(timer);
      try {
        await this.pruning?.catch(() => {});
        // Rows that could not be written within the stop deadline are reported, not thrown.
        await this.queue.stop().catch((error: unknown) => this.onError(error));
      } finally {
        for (const step of this.closeSteps) await step().catch((error: unknown) => this.onError(error));
        await this.db.destroy();
      }
    })();
    return this.closing;
  }
}

/** A ranked server as a /trends item. */
function trendServer(r: RankedServer, uptimePercentage: number): TrendServer {
  return {
    server_id: r.id,
    hostname: r.host,
    address: serverAddress(r.edition, r.host, r.port),
    port: r.port,
    edition: r.edition,
    trend_score: scoreValue(r.score),
    is_online: true,
    stale: false,
    checked_at: new Date(r.lastSeen).toISOString(),
    players_online: r.playersOnline,
    players_max: r.playersMax,
    record_players: r.recordPlayers,
    uptime_percentage: uptimePercentage,
  };
}
