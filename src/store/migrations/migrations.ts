/**
 * Migrations defined in code (no files to ship or find at run time), applied at start by the
 * migration runner (migration-runner.ts), each in a transaction of its own or, for a copy of
 * every row, in resumable steps. Append new entries; never edit one that has shipped.
 */
import { sql, type CreateTableBuilder, type Kysely, type Migration } from 'kysely';
import { createBatchLedger } from '../history/batch-ledger.js';
import { historyLayoutMigration } from './history-layout.js';
import { addFourHourRollup } from '../postgres/layout-migrations.js';
import type { ObserverMigration } from './migration-runner.js';
import type { Dialect } from '../schema.js';
import { WATCH_CREATION_LOCK } from '../watches/watch-rows.js';

export interface MigrationOptions {
  /** Checks a step of a resumable copy aims at (default history-layout.ts's DEFAULT_ROWS_PER_STEP). */
  rowsPerStep?: number;
}

/** Every migration, in the order they apply. */
export function observerMigrations(dialect: Dialect, options: MigrationOptions = {}): ObserverMigration[] {
  const atomic = migrationDefinitions(dialect);
  const own = Object.entries(atomic).map(([name, migration]): ObserverMigration =>
    name === '0003_history_layout' ? historyLayoutMigration(dialect, name, options.rowsPerStep) : { name, up: migration.up },
  );
  return [...own, ...appended.map((make) => make(dialect))];
}

const appended: Array<(dialect: Dialect) => ObserverMigration> = [];

/**
 * Appends a migration after Observer's own, in this thread: how a test runs this build as the
 * next version, one schema change ahead. Nothing in the service calls it; only a module
 * preloaded with `node --import` does (test/support/test-migration.mjs, docs/storage.md).
 */
export function appendMigration(make: (dialect: Dialect) => ObserverMigration): void {
  appended.push(make);
}

function migrationDefinitions(dialect: Dialect): Record<string, Migration> {
  return {
    '0001_history': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('servers')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('edition', 'text', (c) => c.notNull())
          .addColumn('host', 'text', (c) => c.notNull())
          .addColumn('port', 'integer', (c) => c.notNull())
          .addColumn('first_seen', 'bigint', (c) => c.notNull())
          .addColumn('last_seen', 'bigint', (c) => c.notNull())
          .addColumn('record_players', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('last_online', 'integer', (c) => c.notNull())
          .addColumn('players_online', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('players_max', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('clients_24h', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('trend_score', 'bigint', (c) => c.notNull().defaultTo(0))
          .execute();
        // /trends: walks online servers in ranking order; last_seen is in the index so that
        // servers whose latest check is too old are skipped without reading their rows.
        await db.schema
          .createIndex('servers_ranking')
          .on('servers')
          .columns(['trend_score desc', 'id', 'last_seen'])
          .where(sql.ref('last_online'), '=', 1)
          .execute();
        // /stats: servers whose latest check is in the last 24 hours, one range answered from
        // the index alone; retention pruning of servers.
        await db.schema.createIndex('servers_last_seen').on('servers').columns(['last_seen', 'last_online', 'players_online']).execute();

        await db.schema
          .createTable('checks')
          .addColumn('id', dialect === 'postgres' ? 'bigint' : 'integer', (c) =>
            dialect === 'postgres' ? c.primaryKey().generatedAlwaysAsIdentity() : c.primaryKey(),
          )
          .addColumn('server_id', 'text', (c) => c.notNull())
          .addColumn('checked_at', 'bigint', (c) => c.notNull())
          .addColumn('online', 'integer', (c) => c.notNull())
          .addColumn('players_online', 'integer')
          .addColumn('players_max', 'integer')
          .addColumn('latency_ms', 'double precision')
          .addColumn('version', 'text')
          .execute();
        // Uptime of a page of servers over 7 days, answered from the index alone.
        await db.schema.createIndex('checks_server_time').on('checks').columns(['server_id', 'checked_at', 'online']).execute();
        // recentChecks (newest first) and retention pruning (oldest first).
        await db.schema.createIndex('checks_time').on('checks').columns(['checked_at', 'id']).execute();

        await db.schema
          .createTable('lookups')
          .addColumn('server_id', 'text', (c) => c.notNull())
          .addColumn('client_hash', 'text', (c) => c.notNull())
          .addColumn('seen_at', 'bigint', (c) => c.notNull())
          .addPrimaryKeyConstraint('lookups_pk', ['server_id', 'client_hash'])
          .execute();
        await db.schema.createIndex('lookups_seen_at').on('lookups').column('seen_at').execute();

        await db.schema
          .createTable('counters')
          .addColumn('name', 'text', (c) => c.primaryKey())
          .addColumn('value', 'bigint', (c) => c.notNull().defaultTo(0))
          .execute();
      },
      async down(db: Kysely<unknown>) {
        for (const table of ['counters', 'lookups', 'checks', 'servers']) {
          await db.schema.dropTable(table).ifExists().execute();
        }
      },
    },
    '0002_watches': {
      up: (db: Kysely<unknown>) => createWatchTables(db, dialect),
      async down(db: Kysely<unknown>) {
        for (const table of ['watch_deliveries', 'watch_events', 'watches', 'watch_keys']) {
          await db.schema.dropTable(table).ifExists().execute();
        }
      },
    },
    // Defined in history-layout.ts (resumable steps on SQLite).
    '0003_history_layout': { up: async () => {} },
    '0004_watch_bounds': {
      up: addWatchBounds,
      async down(db: Kysely<unknown>) {
        for (const index of ['watches_server', 'watch_events_created']) await db.schema.dropIndex(index).ifExists().execute();
        for (const [table, column] of WATCH_BOUND_COLUMNS) await db.schema.alterTable(table).dropColumn(column[0]).execute();
      },
    },
    '0005_four_hour_rollup': {
      up: (db: Kysely<unknown>) => addFourHourRollup(db, dialect),
    },
    '0006_batch_ledger': {
      up: (db: Kysely<unknown>) => createBatchLedger(db),
    },
  };
}

/** A column: name, type, and `required` (NOT NULL), `key` (primary key) or a NOT NULL default. */
type Column = [name: string, type: 'text' | 'integer' | 'bigint', constraint?: 'required' | 'key' | number | string];

function withColumns(table: CreateTableBuilder<string, string>, columns: Column[]): CreateTableBuilder<string, string> {
  return columns.reduce(
    (t, [name, type, constraint]) =>
      t.addColumn(name, type, (c) =>
        constraint === 'key' ? c.primaryKey() : constraint === 'required' ? c.notNull() : constraint === undefined ? c : c.notNull().defaultTo(constraint),
      ),
    table,
  );
}

/** Watches (docs/watches.md): the watch, its events (one row per event: the claim), its delivery log. */
async function createWatchTables(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const watches: Column[] = [
    ['id', 'text', 'key'],
    ...(['token_hash', 'verify_token', 'address', 'host', 'edition', 'webhook_kind', 'webhook_url'] as const).map((name): Column => [name, 'text', 'required']),
    ['players_at_least', 'integer'],
    ['public_url', 'text', 'required'],
    ['client_hash', 'text', 'required'],
    ['created_at', 'bigint', 'required'],
    ['expires_at', 'bigint'],
    ['verified_at', 'bigint'],
    ['verified_by', 'text'],
    ['next_check_at', 'bigint', 'required'],
    ['last_checked_at', 'bigint'],
    ['state', 'text', 'required'],
    ['failures', 'integer', 0],
    ['fail_since', 'bigint'],
    ['above', 'integer', 0],
    ['sequence', 'integer', 0],
  ];
  await withColumns(db.schema.createTable('watches'), watches).execute();
  // The scheduler's walk: watches due for a check (verified or not).
  await db.schema.createIndex('watches_due').on('watches').columns(['next_check_at']).execute();
  // Unverified watches per client, and their expiry.
  await db.schema.createIndex('watches_client').on('watches').columns(['client_hash', 'verified_at']).execute();

  // One row per (watch, sequence): inserting it is the claim of the event, whatever the instance.
  const eventKey: Column[] = [
    ['watch_id', 'text', 'required'],
    ['sequence', 'integer', 'required'],
    ['kind', 'text', 'required'],
  ];
  const events: Column[] = [
    ...eventKey,
    ['body', 'text', 'required'],
    ['created_at', 'bigint', 'required'],
    ['attempts', 'integer', 0],
    ['next_attempt_at', 'bigint'],
    ['lease_until', 'bigint', 0],
    ['outcome', 'text'],
  ];
  await withColumns(db.schema.createTable('watch_events'), events).addPrimaryKeyConstraint('watch_events_pk', ['watch_id', 'sequence']).execute();
  await db.schema.createIndex('watch_events_pending').on('watch_events').columns(['next_attempt_at']).execute();

  const deliveries: Column[] = [
    ...eventKey,
    ['attempt', 'integer', 'required'],
    ['at', 'bigint', 'required'],
    ['status_code', 'integer'],
    ['error', 'text'],
  ];
  const deliveryTable = db.schema
    .createTable('watch_deliveries')
    .addColumn('id', dialect === 'postgres' ? 'bigint' : 'integer', (c) => (dialect === 'postgres' ? c.primaryKey().generatedAlwaysAsIdentity() : c.primaryKey()));
  await withColumns(deliveryTable, deliveries).execute();
  await db.schema.createIndex('watch_deliveries_watch').on('watch_deliveries').columns(['watch_id', 'id']).execute();

  // The signing key of watches when WATCH_SECRET is not set: made once, shared by every instance.
  await withColumns(db.schema.createTable('watch_keys'), [
    ['name', 'text', 'key'],
    ['value', 'text', 'required'],
  ]).execute();
}

/** Columns added by 0004_watch_bounds, by table (SQLite adds one column per ALTER TABLE). */
const WATCH_BOUND_COLUMNS: Array<['watches' | 'watch_events', Column]> = [
  // What WATCHES_PER_SERVER counts: the server_id of the watched address.
  ['watches', ['server_key', 'text', '']],
  // The TXT record name whose proof counts, as the last look found it (the name checks connect to).
  ['watches', ['txt_name', 'text']],
  // When the owner's proof was last seen, and when DNS was last asked for it.
  ['watches', ['proof_seen_at', 'bigint']],
  ['watches', ['txt_checked_at', 'bigint']],
  // Set while a verified watch is paused because its proof has not been seen for too long.
  ['watches', ['paused_at', 'bigint']],
  // Undecided answers in a row (stale or refused): the recheck backs off with them.
  ['watches', ['rechecks', 'integer', 0]],
  ['watches', ['last_test_at', 'bigint']],
  // The fencing token of the lease: only its holder may finish the attempt.
  ['watch_events', ['lease_token', 'text']],
];

/**
 * Bounds on watches (docs/hostile-clients.md, "Watches"): what the caps count, proof seen
 * again, paused watches, fenced leases, and the row whose lock makes "count, then insert" of a
 * new watch one step on every database.
 */
async function addWatchBounds(db: Kysely<unknown>): Promise<void> {
  for (const [table, [name, type, constraint]] of WATCH_BOUND_COLUMNS) {
    await db.schema
      .alterTable(table)
      .addColumn(name, type, (c) => (constraint === undefined ? c : c.notNull().defaultTo(constraint)))
      .execute();
  }
  await db.schema.createIndex('watches_server').on('watches').columns(['server_key']).execute();
  await db.schema.createIndex('watch_events_created').on('watch_events').columns(['created_at']).execute();
  // A verified watch's proof dates from its verification.
  await sql`update watches set proof_seen_at = verified_at where verified_at is not null`.execute(db);
  await sql`insert into watch_keys (name, value) values (${WATCH_CREATION_LOCK}, '')`.execute(db);
}
