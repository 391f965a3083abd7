/**
 * Migrations defined in code (no files to ship or find at run time), applied by Kysely's
 * Migrator at start. Append new entries; never edit one that has shipped.
 */
import { sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { Dialect } from './schema.js';

export function migrationProvider(dialect: Dialect): MigrationProvider {
  const migrations: Record<string, Migration> = {
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
  };
  return { getMigrations: async () => migrations };
}

/** Watches (docs/api.md, "Watches"): the watch, its events (one row per event: the claim), its delivery log. */
async function createWatchTables(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('watches')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull())
    .addColumn('verify_token', 'text', (c) => c.notNull())
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('edition', 'text', (c) => c.notNull())
    .addColumn('webhook_kind', 'text', (c) => c.notNull())
    .addColumn('webhook_url', 'text', (c) => c.notNull())
    .addColumn('players_at_least', 'integer')
    .addColumn('public_url', 'text', (c) => c.notNull())
    .addColumn('client_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .addColumn('verified_at', 'bigint')
    .addColumn('verified_by', 'text')
    .addColumn('next_check_at', 'bigint', (c) => c.notNull())
    .addColumn('last_checked_at', 'bigint')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('fail_since', 'bigint')
    .addColumn('above', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('sequence', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  // The scheduler's walk: watches due for a check (verified or not).
  await db.schema.createIndex('watches_due').on('watches').columns(['next_check_at']).execute();
  // Unverified watches per client, and their expiry.
  await db.schema.createIndex('watches_client').on('watches').columns(['client_hash', 'verified_at']).execute();

  // One row per (watch, sequence): inserting it is the claim of the event, whatever the instance.
  await db.schema
    .createTable('watch_events')
    .addColumn('watch_id', 'text', (c) => c.notNull())
    .addColumn('sequence', 'integer', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'bigint')
    .addColumn('lease_until', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('outcome', 'text')
    .addPrimaryKeyConstraint('watch_events_pk', ['watch_id', 'sequence'])
    .execute();
  await db.schema.createIndex('watch_events_pending').on('watch_events').columns(['next_attempt_at']).execute();

  await db.schema
    .createTable('watch_deliveries')
    .addColumn('id', dialect === 'postgres' ? 'bigint' : 'integer', (c) =>
      dialect === 'postgres' ? c.primaryKey().generatedAlwaysAsIdentity() : c.primaryKey(),
    )
    .addColumn('watch_id', 'text', (c) => c.notNull())
    .addColumn('sequence', 'integer', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('error', 'text')
    .execute();
  await db.schema.createIndex('watch_deliveries_watch').on('watch_deliveries').columns(['watch_id', 'id']).execute();

  // The signing key of watches when WATCH_SECRET is not set: made once, shared by every instance.
  await db.schema
    .createTable('watch_keys')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .execute();
}
