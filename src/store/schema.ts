/**
 * The tables as Kysely sees them. One schema for both dialects: times are milliseconds since
 * the epoch in BIGINT columns and booleans are 0/1 INTEGERs, so SQLite and PostgreSQL store
 * and compare the same values.
 */
import type { Generated } from 'kysely';

export interface ServersTable {
  /** The integer key the history tables use. */
  sid: Generated<number>;
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

/**
 * Raw checks, kept CHECK_RETENTION_DAYS: one row per (server, millisecond), clustered by
 * server and time (SQLite: WITHOUT ROWID; PostgreSQL: partitioned by day).
 */
export interface ChecksTable {
  /** servers.sid */
  server: number;
  checked_at: number;
  online: number;
  /** Null when offline or not reported. */
  players_online: number | null;
  players_max: number | null;
  /** Rounded to whole milliseconds. */
  latency_ms: number | null;
}

/**
 * Checks rolled up by hour as they are written, kept ROLLUP_RETENTION_DAYS: what the 7- and
 * 30-day history and the uptime of /trends read.
 */
export interface CheckHoursTable {
  server: number;
  /** Hours since the epoch (UTC): the hour holding the checks. */
  hour: number;
  checks: number;
  online: number;
  /** Online checks that reported a player count, their sum and their highest. */
  players_n: number;
  players_sum: number;
  players_peak: number | null;
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
  check_hours: CheckHoursTable;
  /** PostgreSQL only: the hourly rows of each four hours summed, `hour` the first (a multiple of 4). */
  check_four_hours: CheckHoursTable;
  lookups: LookupsTable;
  counters: CountersTable;
  watches: WatchesTable;
  watch_events: WatchEventsTable;
  watch_deliveries: WatchDeliveriesTable;
  watch_keys: WatchKeysTable;
}

/** A watch (docs/watches.md); the columns are described in store/watches/watch-store.ts. */
export interface WatchesTable {
  id: string;
  token_hash: string;
  verify_token: string;
  address: string;
  host: string;
  edition: string;
  webhook_kind: string;
  webhook_url: string;
  players_at_least: number | null;
  /** Not read: links in deliveries come from PUBLIC_URL as it is when they are sent. */
  public_url: string;
  /** scrypt of the creating client's network (watch/keys.ts): WATCHES_PER_CLIENT and fair scheduling. */
  client_hash: string;
  /** The server_id of the watched address: WATCHES_PER_SERVER. */
  server_key: string;
  created_at: number;
  expires_at: number | null;
  verified_at: number | null;
  verified_by: string | null;
  next_check_at: number;
  last_checked_at: number | null;
  state: string;
  failures: number;
  fail_since: number | null;
  above: number;
  sequence: number;
  /** `_observer.<name>` whose TXT record proves the server, as the last look found it. */
  txt_name: string | null;
  /** When the owner's proof (token in the MOTD, TXT record) was last seen. */
  proof_seen_at: number | null;
  /** When the TXT record was last looked up for a verified watch. */
  txt_checked_at: number | null;
  /** Since when the watch is paused (its proof not seen for WATCH_PROOF_GRACE_DAYS); null: not paused. */
  paused_at: number | null;
  /** Undecided answers (stale, refused) in a row. */
  rechecks: number;
  /** The last test delivery asked for. */
  last_test_at: number | null;
}

export interface WatchEventsTable {
  watch_id: string;
  sequence: number;
  kind: string;
  body: string;
  created_at: number;
  attempts: number;
  /** When the next attempt is due; null once delivered or given up. */
  next_attempt_at: number | null;
  /** An instance delivering the event holds it until then. */
  lease_until: number;
  /** The holder's fencing token: an attempt is finished only by the lease it was sent under. */
  lease_token: string | null;
  /** `delivered` or `gave_up`; null while pending. */
  outcome: string | null;
}

export interface WatchDeliveriesTable {
  id: Generated<number>;
  watch_id: string;
  sequence: number;
  kind: string;
  attempt: number;
  at: number;
  status_code: number | null;
  /** null: delivered; `refused`: the webhook answered but not 2xx; `failed`: no answer (kept that coarse on purpose). */
  error: string | null;
}

export interface WatchKeysTable {
  name: string;
  value: string;
}

export type Dialect = 'sqlite' | 'postgres';

/**
 * How the layout before migration 0003 is read while that migration copies the history: the
 * table of its checks (keyed by the server's text id) and the servers' numeric key. SQLite
 * keeps that table as `checks` until the copy's last transaction and keys servers by rowid;
 * PostgreSQL's first transaction renames it `checks_v1` and numbers the servers (`sid`).
 */
export interface PreviousLayout {
  checks: 'checks' | 'checks_v1';
  key: 'rowid' | 'sid';
}
