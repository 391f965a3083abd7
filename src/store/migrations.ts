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
  };
  return { getMigrations: async () => migrations };
}
