/**
 * The embedded SQLite binding. better-sqlite3 (13 and later: Node-API, prebuilt) where npm
 * installed it, which it does on Node 22 and later; libsql (prebuilt, Node-API, the same
 * synchronous API) where it did not, which is Node 20. docs/performance.md has the figures
 * behind the choice.
 *
 * Both are used through the part of better-sqlite3's API they share. libsql differs in two
 * ways that matter here, so this module is the only place that asks for a pragma's value, and
 * a row read with `get()` is read by its columns' names (libsql adds a `_metadata` field to it,
 * and ignores `pluck()` there).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

export type SqliteConnection = BetterSqlite3.Database;
export type SqliteBindingName = 'better-sqlite3' | 'libsql';

export interface SqliteBinding {
  readonly name: SqliteBindingName;
  readonly version: string;
  /** What a worker thread passes to `require()` to load the same binding. */
  readonly modulePath: string;
  open(path: string, options?: { readonly?: boolean }): SqliteConnection;
}

type Constructor = new (path: string, options?: { readonly?: boolean }) => SqliteConnection;

const require = createRequire(import.meta.url);
const loaded = new Map<SqliteBindingName, SqliteBinding | null>();

function tryLoad(name: SqliteBindingName): SqliteBinding | null {
  if (loaded.has(name)) return loaded.get(name)!;
  let binding: SqliteBinding | null = null;
  try {
    const modulePath = require.resolve(name);
    const Database = require(modulePath) as Constructor;
    const root = modulePath.slice(0, modulePath.lastIndexOf(`node_modules/${name}/`)) + `node_modules/${name}/package.json`;
    const { version } = JSON.parse(readFileSync(root, 'utf8')) as { version: string };
    // Loading the module is not enough: its native part loads with the first connection.
    new Database(':memory:').close();
    binding = { name, version, modulePath, open: (path, options) => new Database(path, options) };
  } catch {
    binding = null;
  }
  loaded.set(name, binding);
  return binding;
}

/** The binding this process uses; `only` asks for one of them (benchmarks compare both). */
export function sqliteBinding(only?: SqliteBindingName): SqliteBinding {
  const binding = only ? tryLoad(only) : (tryLoad('better-sqlite3') ?? tryLoad('libsql'));
  if (!binding) throw new Error(`no SQLite binding could be loaded (${only ?? 'better-sqlite3 or libsql'}): run npm ci`);
  return binding;
}

/** The value of a pragma (`journal_mode`, `wal_autocheckpoint`, `integrity_check`, ...). */
export function pragmaValue(database: SqliteConnection, pragma: string): unknown {
  return database.prepare(`PRAGMA ${pragma}`).pluck().all()[0];
}
