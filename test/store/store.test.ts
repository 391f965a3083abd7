/** The store suite against SQLite (a file in a temp dir) and the real PostgreSQL. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteBinding } from '../../src/store/sqlite/binding.js';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../support/postgres-databases.js';
import { storeSuite, type StoreTarget } from './store.suite.js';

const sqliteDirs: string[] = [];
storeSuite({
  name: 'SQLite',
  async create(retention = {}): Promise<StoreTarget> {
    const dir = mkdtempSync(join(tmpdir(), 'observer-store-'));
    sqliteDirs.push(dir);
    // A directory that does not exist yet: openStore creates it.
    const path = join(dir, 'data', 'observer.db');
    return {
      config: { database: { kind: 'sqlite', path }, checkRetentionDays: retention.checkDays ?? 30, rollupRetentionDays: retention.rollupDays ?? 30 },
      async query(text) {
        const db = sqliteBinding().open(path, { readonly: true });
        try {
          return db.prepare(text).all() as Record<string, unknown>[];
        } finally {
          db.close();
        }
      },
    };
  },
  async dispose() {
    for (const dir of sqliteDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  },
});

const databases: TestDatabase[] = [];
const clients: pg.Client[] = [];

storeSuite({
  name: 'PostgreSQL',
  async create(retention = {}): Promise<StoreTarget> {
    const database = await createTestDatabase();
    databases.push(database);
    const reader = new pg.Client({ connectionString: database.url });
    await reader.connect();
    clients.push(reader);
    return {
      config: { database: { kind: 'postgres', url: database.url }, checkRetentionDays: retention.checkDays ?? 30, rollupRetentionDays: retention.rollupDays ?? 30 },
      async query(text) {
        return (await reader.query(text)).rows as Record<string, unknown>[];
      },
    };
  },
  async dispose() {
    await Promise.all(clients.splice(0).map((c) => c.end()));
    for (const database of databases.splice(0)) await database.drop();
  },
});
