/**
 * The Store over Kysely, one implementation for SQLite and PostgreSQL (the SQL is portable:
 * ON CONFLICT upserts, RETURNING, CASE instead of MAX/GREATEST).
 *
 * Hot paths and how they stay cheap:
 * - recordCheck: one transaction, an upsert of the server row (which carries the latest
 *   check, the record and the trend score) and an insert into checks.
 * - count / recordLookup: buffered in memory, written together in one transaction at most a
 *   second apart and on close: never one write per request.
 * - trends: walks the `servers_ranking` index in score order with a keyset condition; only
 *   the page's rows are read, and uptime is summed for those ids only.
 * - stats: one covering-index range over servers seen in 24 hours, the counters, and the
 *   newest 10 checks; computed at most once per 60 s.
 */
import { createHash } from 'node:crypto';
import { Migrator, sql, type Kysely, type Transaction } from 'kysely';
import type { Clock } from '../core/clock.js';
import type { Edition } from '../core/types.js';
import { InvalidCursorError } from './errors.js';
import { migrationProvider } from './migrations.js';
import { SCORE_SCALE, playersScore, scoreValue } from './ranking.js';
import type { Database, Dialect } from './schema.js';
import type { CheckRecord, CounterIncrements, HistoryStore, Statistics, TrendPage, TrendServer } from './types.js';
import { readServerHistory, type HistoryRange, type ServerHistory } from './uptime-history.js';

export interface StoreOptions {
  /** How long a computed /stats stays in memory (default 60 s, the spec's stats cache). */
  statsCacheMs?: number;
  /** Counter and look-up write interval (default 1 s). */
  flushIntervalMs?: number;
  /** Retention pruning interval (default 1 h; it also runs at start). */
  pruneIntervalMs?: number;
  /** Failures of background work (flush timer, pruning, idle pool clients). */
  onError?: (error: unknown) => void;
}

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
/** /trends lists servers whose latest check is online and younger than this. */
const TREND_FRESHNESS_MS = 30 * MINUTE;
const UPTIME_WINDOW_MS = 7 * DAY;
/** Distinct clients are counted over this window; older look-up rows are deleted. */
const LOOKUP_WINDOW_MS = DAY;
const STATS_WINDOW_MS = DAY;
/** Look-up expiry runs with a flush when this long has passed since the last one. */
const EXPIRY_INTERVAL_MS = MINUTE;
/** Rows per multi-row statement: well under SQLite's and PostgreSQL's parameter limits. */
const CHUNK = 500;
const PRUNE_BATCH = 10_000;
/** Look-ups buffered while the database is unreachable; beyond this they are dropped. */
const MAX_BUFFERED_LOOKUPS = 100_000;
const MAX_INT32 = 2_147_483_647;

const DEFAULT_PORT: Record<Edition, number> = { java: 25565, bedrock: 19132 };
const COUNTERS = ['totalRequests', 'apiRequests', 'serverQueries', 'totalChecks'] as const;

interface BufferedLookup {
  server_id: string;
  client_hash: string;
  seen_at: number;
}

/** Without an onError option, a failed flush or prune is at least not silent. */
export function reportBackgroundError(error: unknown): void {
  process.emitWarning(error instanceof Error ? error : String(error), { code: 'OBSERVER_STORE' });
}

/** `host`, or `host:port` when the port is not the edition's default; IPv6 in brackets. */
export function serverAddress(edition: Edition, host: string, port: number): string {
  if (port === DEFAULT_PORT[edition]) return host;
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

function count(value: number | null | undefined): number {
  if (value === null || value === undefined || !Number.isFinite(value)) return 0;
  return Math.min(MAX_INT32, Math.max(0, Math.floor(value)));
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
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

export class KyselyHistoryStore implements HistoryStore {
  private counters = new Map<string, number>();
  private lookups = new Map<string, BufferedLookup>();
  private flushing: Promise<void> = Promise.resolve();
  private lastExpiry = Number.NEGATIVE_INFINITY;
  private statsCache: { at: number; value: Promise<Statistics> } | null = null;
  private timers: NodeJS.Timeout[] = [];
  private pruning: Promise<void> | null = null;
  private closing: Promise<void> | null = null;
  private readonly statsCacheMs: number;
  private readonly onError: (error: unknown) => void;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    private readonly retentionDays: number,
    private readonly clock: Clock,
    private readonly options: StoreOptions = {},
  ) {
    this.statsCacheMs = options.statsCacheMs ?? MINUTE;
    this.onError = options.onError ?? reportBackgroundError;
  }

  /** Starts the flush and prune timers (unref'd: they never keep the process alive). */
  start(): void {
    const flush = setInterval(() => {
      this.flushBuffers(EXPIRY_INTERVAL_MS).catch(this.onError);
    }, this.options.flushIntervalMs ?? 1000);
    const prune = setInterval(() => {
      this.prune().catch(this.onError);
    }, this.options.pruneIntervalMs ?? 60 * MINUTE);
    flush.unref();
    prune.unref();
    this.timers.push(flush, prune);
  }

  async migrate(): Promise<void> {
    const migrator = new Migrator({ db: this.db, provider: migrationProvider(this.dialect) });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error instanceof Error ? error : new Error(`migration failed: ${String(error)}`);
  }

  async recordCheck(check: CheckRecord): Promise<void> {
    const online = check.online ? 1 : 0;
    const players = check.online ? count(check.playersOnline) : 0;
    const playersMax = check.online ? count(check.playersMax) : 0;
    const playersPart = check.online ? playersScore(players) : 0;
    const latency = check.latencyMs !== null && Number.isFinite(check.latencyMs) ? Math.max(0, check.latencyMs) : null;
    // Columns describing the latest check only change for a check at least as new as it.
    const newer = (column: 'last_online' | 'players_online' | 'players_max') =>
      sql<number>`CASE WHEN excluded.last_seen >= servers.last_seen THEN excluded.${sql.ref(column)} ELSE servers.${sql.ref(column)} END`;

    await this.db.transaction().execute(async (trx) => {
      // A new server row starts with the look-ups already recorded for it, which keeps
      // clients_24h equal to its number of look-up rows.
      const lookupRows = trx
        .selectFrom('lookups')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('server_id', '=', check.serverId);
      await trx
        .insertInto('servers')
        .values({
          id: check.serverId,
          edition: check.edition,
          host: check.host,
          port: check.port,
          first_seen: check.checkedAt,
          last_seen: check.checkedAt,
          record_players: players,
          last_online: online,
          players_online: players,
          players_max: playersMax,
          clients_24h: sql<number>`(${lookupRows})`,
          trend_score: sql<number>`(${lookupRows}) * ${SCORE_SCALE} + ${playersPart}`,
        })
        .onConflict((oc) =>
          oc.column('id').doUpdateSet({
            first_seen: sql`CASE WHEN excluded.first_seen < servers.first_seen THEN excluded.first_seen ELSE servers.first_seen END`,
            last_seen: sql`CASE WHEN excluded.last_seen >= servers.last_seen THEN excluded.last_seen ELSE servers.last_seen END`,
            record_players: sql`CASE WHEN excluded.record_players > servers.record_players THEN excluded.record_players ELSE servers.record_players END`,
            last_online: newer('last_online'),
            players_online: newer('players_online'),
            players_max: newer('players_max'),
            trend_score: sql`CASE WHEN excluded.last_seen >= servers.last_seen THEN servers.clients_24h * ${SCORE_SCALE} + ${playersPart} ELSE servers.trend_score END`,
          }),
        )
        .execute();
      await trx
        .insertInto('checks')
        .values({
          server_id: check.serverId,
          checked_at: check.checkedAt,
          online,
          players_online: check.online && check.playersOnline !== null ? players : null,
          players_max: check.online && check.playersMax !== null ? playersMax : null,
          latency_ms: latency,
          version: check.version === null ? null : check.version.slice(0, 256),
        })
        .execute();
    });
  }

  count(increments: CounterIncrements): void {
    if (this.closing) return;
    for (const name of COUNTERS) {
      const n = increments[name];
      if (n === undefined || !Number.isFinite(n) || n <= 0) continue;
      this.counters.set(name, (this.counters.get(name) ?? 0) + Math.floor(n));
    }
  }

  recordLookup(serverId: string, clientKey: string): void {
    if (this.closing) return;
    // Hashed again with the server id: the rows of one client under different servers
    // cannot be linked to each other, nor to the key the caller (or a rate limiter) used.
    const clientHash = createHash('sha256').update(serverId).update('\0').update(clientKey).digest('base64url').slice(0, 22);
    const key = `${serverId}\0${clientHash}`;
    if (!this.lookups.has(key) && this.lookups.size >= MAX_BUFFERED_LOOKUPS) return;
    this.lookups.set(key, { server_id: serverId, client_hash: clientHash, seen_at: this.clock.now() });
  }

  flush(): Promise<void> {
    return this.flushBuffers(0);
  }

  /**
   * Writes buffered counters and look-ups in one transaction, and expires look-ups older
   * than 24 hours when the last expiry is older than `expiryAgeMs`. Flushes run one at a
   * time; on failure the increments go back into the buffers for the next attempt.
   */
  private flushBuffers(expiryAgeMs: number): Promise<void> {
    const run = this.flushing.then(async () => {
      const now = this.clock.now();
      const expire = now - this.lastExpiry >= expiryAgeMs;
      if (this.counters.size === 0 && this.lookups.size === 0 && !expire) return;
      const counters = this.counters;
      const lookups = this.lookups;
      this.counters = new Map();
      this.lookups = new Map();
      try {
        await this.db.transaction().execute(async (trx) => {
          await this.writeCounters(trx, counters);
          await this.writeLookups(trx, [...lookups.values()]);
          if (expire) await this.expireLookups(trx, now - LOOKUP_WINDOW_MS);
        });
        if (expire) this.lastExpiry = now;
      } catch (error) {
        for (const [name, n] of counters) this.counters.set(name, (this.counters.get(name) ?? 0) + n);
        for (const [key, lookup] of lookups) {
          if (!this.lookups.has(key) && this.lookups.size < MAX_BUFFERED_LOOKUPS) this.lookups.set(key, lookup);
        }
        throw error;
      }
    });
    this.flushing = run.catch(() => {});
    return run;
  }

  private async writeCounters(trx: Transaction<Database>, counters: Map<string, number>): Promise<void> {
    if (counters.size === 0) return;
    await trx
      .insertInto('counters')
      .values([...counters].map(([name, value]) => ({ name, value })))
      .onConflict((oc) => oc.column('name').doUpdateSet({ value: sql`counters.value + excluded.value` }))
      .execute();
  }

  private async writeLookups(trx: Transaction<Database>, lookups: BufferedLookup[]): Promise<void> {
    const added: string[] = [];
    for (const chunk of chunks(lookups)) {
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
    await this.adjustClients(trx, added, +1);
  }

  private async expireLookups(trx: Transaction<Database>, before: number): Promise<void> {
    const gone = await trx.deleteFrom('lookups').where('seen_at', '<', before).returning('server_id').execute();
    await this.adjustClients(
      trx,
      gone.map((r) => r.server_id),
      -1,
    );
  }

  /** Adds (sign +1) or removes (sign -1) distinct clients of servers, keeping the score in step. */
  private async adjustClients(trx: Transaction<Database>, serverIds: string[], sign: 1 | -1): Promise<void> {
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

  async trends(limit: number, cursor: string | null): Promise<TrendPage> {
    // No flush here (that would be a write per request): look-ups reach the ranking within
    // a flush interval (1 s), and leave it within a minute of turning 24 hours old.
    const now = this.clock.now();
    // One statement: the cursor's score is read in the same snapshot as the page, so the
    // page is a contiguous slice of one ranking.
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
      // range over every fresh server and sort them, where servers_ranking reads the page in
      // order and checks freshness from its own last_seen column.
      .where(sql<number>`+${sql.ref('last_seen')}`, '>=', now - TREND_FRESHNESS_MS)
      .$if(cursor !== null, (qb) =>
        qb.where((eb) => {
          const cursorScore = eb.selectFrom('servers as c').select('c.trend_score').where('c.id', '=', cursor!);
          return eb.and([
            eb('trend_score', '<=', cursorScore),
            eb.or([eb('trend_score', '<', cursorScore), eb('id', '>', cursor!)]),
          ]);
        }),
      )
      .orderBy('trend_score', 'desc')
      .orderBy('id', 'asc')
      .limit(limit + 1)
      .execute();

    if (rows.length === 0 && cursor !== null) {
      const known = await this.db.selectFrom('servers').select('id').where('id', '=', cursor).executeTakeFirst();
      if (!known) throw new InvalidCursorError();
    }

    const page = rows.slice(0, limit);
    const uptime = new Map<string, number>();
    if (page.length > 0) {
      const sums = await this.db
        .selectFrom('checks')
        .select((eb) => ['server_id', eb.fn.countAll<number>().as('total'), eb.fn.sum<number>('online').as('up')])
        .where(
          'server_id',
          'in',
          page.map((r) => r.id),
        )
        .where('checked_at', '>=', now - UPTIME_WINDOW_MS)
        .groupBy('server_id')
        .execute();
      for (const s of sums) {
        const total = Number(s.total);
        uptime.set(s.server_id, total === 0 ? 0 : round2((Number(s.up) * 100) / total));
      }
    }

    const data: TrendServer[] = page.map((r) => {
      const edition = r.edition as Edition;
      const port = Number(r.port);
      return {
        server_id: r.id,
        hostname: r.host,
        address: serverAddress(edition, r.host, port),
        port,
        edition,
        trend_score: scoreValue(Number(r.trend_score)),
        is_online: true,
        stale: false,
        checked_at: new Date(Number(r.last_seen)).toISOString(),
        players_online: Number(r.players_online),
        players_max: Number(r.players_max),
        record_players: Number(r.record_players),
        uptime_percentage: uptime.get(r.id) ?? 0,
      };
    });
    const hasNext = rows.length > limit;
    return { data, hasNext, nextCursor: hasNext ? (data[data.length - 1]?.server_id ?? null) : null };
  }

  stats(): Promise<Statistics> {
    const now = this.clock.now();
    if (this.statsCache && now - this.statsCache.at < this.statsCacheMs) return this.statsCache.value;
    const value = this.computeStats(now);
    const entry = { at: now, value };
    this.statsCache = entry;
    // A failure is not cached: the next call tries again.
    value.catch(() => {
      if (this.statsCache === entry) this.statsCache = null;
    });
    return value;
  }

  private async computeStats(now: number): Promise<Statistics> {
    // The counters include the last second's requests. This write happens at most once per
    // stats computation, i.e. once a minute, not once per request.
    await this.flushBuffers(EXPIRY_INTERVAL_MS);
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

  history(serverId: string, range: HistoryRange): Promise<ServerHistory | null> {
    return readServerHistory(this.db, serverId, range, this.clock.now());
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

  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const timer of this.timers) clearInterval(timer);
      try {
        await this.pruning?.catch(() => {});
        await this.flushBuffers(0);
      } finally {
        await this.db.destroy();
      }
    })();
    return this.closing;
  }
}
