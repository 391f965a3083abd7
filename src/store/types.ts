/**
 * The repository interface the rest of Observer writes history to and reads trends and
 * statistics from. Implemented over SQLite (embedded default) and PostgreSQL.
 */
import type { MigrationState } from './migrations/migration-runner.js';
import type { Edition } from '../core/types.js';
import type { HistoryRange, ServerHistory } from './history/uptime-history.js';
import type { WatchStore } from './watches/watch-store.js';

/** One performed ping, as handed over by the status service. */
export interface CheckRecord {
  serverId: string;
  edition: Edition;
  /** Normalised host as queried (hostname or IP text). */
  host: string;
  port: number;
  /** Milliseconds since the epoch. */
  checkedAt: number;
  online: boolean;
  playersOnline: number | null;
  playersMax: number | null;
  latencyMs: number | null;
}

/**
 * The all-time counters of /stats that the HTTP layer and status service feed. The store
 * adds exactly what it is given: `recordCheck` does not bump `totalChecks` by itself, so the
 * status service counts a performed ping with `count({ totalChecks: 1 })`.
 */
export interface CounterIncrements {
  totalRequests?: number;
  apiRequests?: number;
  serverQueries?: number;
  totalChecks?: number;
}

export interface TrendServer {
  server_id: string;
  hostname: string;
  address: string;
  port: number;
  edition: Edition;
  trend_score: number;
  is_online: true;
  stale: false;
  checked_at: string;
  players_online: number;
  players_max: number;
  record_players: number;
  uptime_percentage: number;
}

export interface TrendPage {
  data: TrendServer[];
  nextCursor: string | null;
  hasNext: boolean;
  /** Set when the database did not answer in time and this is its last good answer, or while an upgrade reads the previous layout. */
  stale?: true;
}

export interface RecentCheck {
  hostname: string;
  port: number;
  edition: Edition;
  online: boolean;
  players: number | null;
  checked_at: string;
}

export interface Statistics {
  totalRequests: number;
  apiRequests: number;
  serverQueries: number;
  totalChecks: number;
  onlineServers: number;
  offlineServers: number;
  activePlayers: number;
  onlineRate: number;
  recentChecks: RecentCheck[];
  /** Set when the database did not answer in time and this is its last good answer, or while an upgrade reads the previous layout. */
  stale?: true;
}

/** What health reports of the history database (GET /api/v1/status adds it as extra fields). */
export interface StoreHealth {
  /** ok: writes succeed; degraded: catching up on a backlog, or rows dropped in the last minute; down: the last write failed. */
  state: 'ok' | 'degraded' | 'down';
  /** Rows (checks and look-ups) waiting in the write buffer. */
  buffered: number;
  /** Rows dropped because the buffer (HISTORY_BUFFER_MAX) was full, since start. */
  dropped: number;
  /** Batches the database kept refusing, set aside in the dead_batches table, since start. */
  deadLettered?: number;
  /** Attempts to write a batch that failed (a full disk fails every attempt until there is room), since start. */
  failedWrites?: number;
}

export interface Store {
  /** Applies migrations; called once at start. */
  migrate(): Promise<void>;
  /**
   * The schema migration running now (its name, and the fraction done), or null. While one
   * runs, trends, stats and history reject with MigratingError (503 `migrating`), but while
   * migration 0003 copies an SQLite history, when they answer from the previous layout
   * (`stale: true`); checks and counts stay buffered, and are written once it is done.
   */
  migration(): MigrationState | null;
  /**
   * Queues a check (and the update of its server row: last seen, record players; and of its
   * hour's rollup row) for the next group commit (at most 50 ms or 500 rows away). Never
   * waits, never throws: while the
   * database is unreachable the check stays buffered (up to HISTORY_BUFFER_MAX rows).
   */
  recordCheck(check: CheckRecord): void;
  /** Queues counter increments for the next group commit, like recordCheck. */
  count(increments: CounterIncrements): void;
  /**
   * Notes that a client (an opaque keyed hash, never an IP) looked a server up today.
   * Queued like the counters; the key is hashed again with the server id before it is
   * written, and look-up rows are deleted 24 hours after their last use.
   */
  recordLookup(serverId: string, clientKey: string): void;
  /**
   * Whether the store has the server's row (a check of it was written and not yet pruned).
   * One primary-key read; rejects when the database cannot answer.
   */
  knowsServer(serverId: string): Promise<boolean>;
  /**
   * One page of the trend ranking (see ranking.ts for the score). `cursor` is the
   * `server_id` of the previous page's last item; an id the store has never seen (or has
   * forgotten) rejects with InvalidCursorError (400 `invalid_cursor`). A first page counts
   * every check and look-up recorded before the call, also those still queued; the pages of
   * a chain come from one ranking, for its first 1,000 servers (ranking-snapshots.ts). Answers within about
   * a second: past that, the last good answer for the same page with `stale: true`, or
   * StoreUnavailableError (503 `store_unavailable`) when there is none.
   */
  trends(limit: number, cursor: string | null): Promise<TrendPage>;
  /** The /stats body; computed at most once per 60 seconds (the result is cached); deadline as trends. */
  stats(): Promise<Statistics>;
  /**
   * One server's uptime and players over `range`, in buckets (see uptime-history.ts); null
   * when the server has never been checked (or its checks were all pruned with it). Every
   * check recorded before the call counts, also one still queued for the group commit.
   */
  history(serverId: string, range: HistoryRange): Promise<ServerHistory | null>;
  /** State of the database as the writes see it, and of the write buffer. */
  health(): StoreHealth;
  /** Writes everything queued (giving up, and reporting, after a few seconds) and releases connections. */
  close(): Promise<void>;
}

/** What the SQLite and PostgreSQL stores offer beyond `Store` (maintenance, tests, bench). */
export interface HistoryStore extends Store {
  /** Watches (docs/watches.md), in the same database. */
  readonly watches: WatchStore;
  /** Writes everything queued now (also expires look-ups older than 24 h); rejects if it cannot within 5 s. */
  flush(): Promise<void>;
  /**
   * One retention pass now (maintenance.ts): raw checks, hourly rows and servers past their
   * retention go; partitions are made ahead on PostgreSQL. The store runs one 10 s after it
   * opens and then hourly, in the background.
   */
  prune(): Promise<void>;
}
