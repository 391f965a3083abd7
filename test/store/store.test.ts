/** The store suite against SQLite (a file in a temp dir) and the real PostgreSQL. */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteBinding } from '../../src/store/sqlite/binding.js';
import pg from 'pg';
import { POSTGRES_URL } from '../support/services.js';
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

const databases: string[] = [];
const clients: pg.Client[] = [];
async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

storeSuite({
  name: 'PostgreSQL',
  async create(retention = {}): Promise<StoreTarget> {
    const name = `observer_test_${randomBytes(6).toString('hex')}`;
    await admin((c) => c.query(`CREATE DATABASE ${name}`));
    databases.push(name);
    const url = new URL(POSTGRES_URL);
    url.pathname = `/${name}`;
    const reader = new pg.Client({ connectionString: url.toString() });
    await reader.connect();
    clients.push(reader);
    return {
      config: { database: { kind: 'postgres', url: url.toString() }, checkRetentionDays: retention.checkDays ?? 30, rollupRetentionDays: retention.rollupDays ?? 30 },
      async query(text) {
        return (await reader.query(text)).rows as Record<string, unknown>[];
      },
    };
  },
  async dispose() {
    await Promise.all(clients.splice(0).map((c) => c.end()));
    await admin(async (c) => {
      for (const name of databases.splice(0)) await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    });
  },
});
