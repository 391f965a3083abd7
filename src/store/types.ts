/**
 * The repository interface the rest of Observer writes history to and reads trends and
 * statistics from. Implemented over SQLite (embedded default) and PostgreSQL.
 */
import type { Edition } from '../core/types.js';
import type { HistoryRange, ServerHistory } from './uptime-history.js';

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
  version: string | null;
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
}

export interface Store {
  /** Applies migrations; called once at start. */
  migrate(): Promise<void>;
  /** Persists a check (and updates the server row: last seen, record players). */
  recordCheck(check: CheckRecord): Promise<void>;
  /** Buffers counter increments; they are flushed at most a second apart and on close. */
  count(increments: CounterIncrements): void;
  /**
   * Notes that a client (an opaque keyed hash, never an IP) looked a server up today.
   * Buffered like the counters; the key is hashed again with the server id before it is
   * written, and look-up rows are deleted 24 hours after their last use.
   */
  recordLookup(serverId: string, clientKey: string): void;
  /**
   * One page of the trend ranking (see ranking.ts for the score). `cursor` is the
   * `server_id` of the previous page's last item; an id the store has never seen (or has
   * forgotten) rejects with InvalidCursorError (400 `invalid_cursor`).
   */
  trends(limit: number, cursor: string | null): Promise<TrendPage>;
  /** The /stats body; computed at most once per 60 seconds (the result is cached). */
  stats(): Promise<Statistics>;
  /**
   * One server's uptime and players over `range`, in buckets (see uptime-history.ts); null
   * when the server has never been checked (or its checks were all pruned with it).
   */
  history(serverId: string, range: HistoryRange): Promise<ServerHistory | null>;
  /** Flushes buffers and releases connections. */
  close(): Promise<void>;
}

/** What the SQLite and PostgreSQL stores offer beyond `Store` (maintenance, tests, bench). */
export interface HistoryStore extends Store {
  /** Writes buffered counters and look-ups now (also expires look-ups older than 24 h). */
  flush(): Promise<void>;
  /** Deletes checks (and servers not checked) older than the retention; runs hourly. */
  prune(): Promise<void>;
}
