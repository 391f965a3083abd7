/**
 * The tables as Kysely sees them. One schema for both dialects: times are milliseconds since
 * the epoch in BIGINT columns and booleans are 0/1 INTEGERs, so SQLite and PostgreSQL store
 * and compare the same values.
 */
import type { Generated } from 'kysely';

export interface ServersTable {
  /** server_id: UUID v5 text. */
  id: string;
  edition: string;
  host: string;
  port: number;
  /** Time of the first and of the latest check. */
  first_seen: number;
  last_seen: number;
  /** Highest player count of any online check. */
  record_players: number;
  /** The latest check, copied here so /trends and /stats read one row per server. */
  last_online: number;
  players_online: number;
  players_max: number;
  /** Number of look-up rows of this server (distinct clients of the last 24 hours). */
  clients_24h: number;
  /** clients_24h * SCORE_SCALE + playersScore(players of the latest check); see ranking.ts. */
  trend_score: number;
}

export interface ChecksTable {
  id: Generated<number>;
  server_id: string;
  checked_at: number;
  online: number;
  players_online: number | null;
  players_max: number | null;
  latency_ms: number | null;
  version: string | null;
}

/** Distinct clients per server: one row per (server, client hash), deleted after 24 hours. */
export interface LookupsTable {
  server_id: string;
  client_hash: string;
  seen_at: number;
}

export interface CountersTable {
  name: string;
  value: number;
}

export interface Database {
  servers: ServersTable;
  checks: ChecksTable;
  lookups: LookupsTable;
  counters: CountersTable;
}

export type Dialect = 'sqlite' | 'postgres';
