/**
 * The repository interface the rest of Observer writes history to and reads trends and
 * statistics from. Implemented over SQLite (embedded default) and PostgreSQL.
 */
import type { Edition } from '../core/types.js';

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

/** The all-time counters of /stats that the HTTP layer and status service feed. */
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
  /** Notes that a client (an opaque keyed hash, never an IP) looked a server up today. */
  recordLookup(serverId: string, clientKey: string): void;
  trends(limit: number, cursor: string | null): Promise<TrendPage>;
  stats(): Promise<Statistics>;
  /** Flushes buffers and releases connections. */
  close(): Promise<void>;
}
