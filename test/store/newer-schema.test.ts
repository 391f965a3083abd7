/**
 * A database a newer Observer migrated (a migration this version does not know) is refused
 * before anything is written to it, on SQLite and PostgreSQL, with a message naming it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { openStore, StoreOpenError } from '../../src/store/index.js';
import { pragmaValue, sqliteBinding } from '../../src/store/sqlite/binding.js';
import { createTestDatabase } from '../support/postgres-databases.js';

const dir = mkdtempSync(join(tmpdir(), 'observer-newer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const FUTURE = '9999_from_the_future';

it('refuses an SQLite file a newer Observer migrated, and leaves it unchanged', async () => {
  const path = join(dir, 'observer.db');
  await (await openStore({ database: { kind: 'sqlite', path }, checkRetentionDays: 30 })).close();
  const db = sqliteBinding().open(path);
  db.prepare('INSERT INTO kysely_migration (name, timestamp) VALUES (?, ?)').run(FUTURE, new Date().toISOString());
  db.close();
  const before = contents(path);

  const error = await openStore({ database: { kind: 'sqlite', path }, checkRetentionDays: 30 }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(StoreOpenError);
  expect((error as Error).message).toContain(path);
  expect((error as Error).message).toContain(`newer Observer (its migration ${FUTURE}`);
  expect(contents(path)).toEqual(before);
});

/**
 * What the file holds: its schema, every table's rows, and its settings. Compared rather than
 * the file's bytes: whichever connection closes last copies the write-ahead log into the file,
 * which changes the bytes but not what they hold.
 */
function contents(path: string): unknown {
  const db = sqliteBinding().open(path);
  try {
    const schema = db.prepare('SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name').all([]) as Array<{ type: string; name: string }>;
    const rows = schema.filter((entry) => entry.type === 'table').map((table) => db.prepare(`SELECT * FROM "${table.name}"`).all([]));
    const settings = ['auto_vacuum', 'journal_mode', 'user_version', 'page_size'].map((name) => pragmaValue(db, name));
    return { schema, rows, settings };
  } finally {
    db.close();
  }
}

it('refuses a PostgreSQL database a newer Observer migrated, and names it', async () => {
  const database = await createTestDatabase('observer_newer');
  try {
    await (await openStore({ database: { kind: 'postgres', url: database.url }, checkRetentionDays: 30 })).close();
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    await client.query('INSERT INTO kysely_migration (name, timestamp) VALUES ($1, $2)', [FUTURE, new Date().toISOString()]);
    const tables = async () => (await client.query("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'")).rows[0].n as number;
    const before = await tables();

    const error = await openStore({ database: { kind: 'postgres', url: database.url }, checkRetentionDays: 30 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreOpenError);
    expect((error as Error).message).toContain(`PostgreSQL database ${database.name}`);
    expect(await tables()).toBe(before);
    await client.end();
  } finally {
    await database.drop();
  }
});
