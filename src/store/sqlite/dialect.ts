import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { LRUCache } from 'lru-cache';
import { SqliteDialect, type SqliteDatabase, type SqliteStatement } from 'kysely';
import { sqliteBinding, type SqliteBinding, type SqliteBindingName, type SqliteConnection } from './binding.js';

/** Prepared statements kept per connection; the hot paths use a handful of texts. */
const STATEMENT_CACHE_SIZE = 256;

/** Bytes the write-ahead log's file is cut back to once it starts over. */
export const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * SQLite through the embedded binding (./binding.ts): WAL (readers never wait for the writer, and a commit is one
 * append to the log), synchronous=NORMAL (a commit survives the process dying; only a power
 * loss can take back the last transactions), and a busy timeout instead of SQLITE_BUSY
 * errors when another connection holds the write lock.
 */
export function createSqliteDialect(
  path: string,
  bindingName?: SqliteBindingName,
): { dialect: SqliteDialect; database: SqliteConnection; binding: SqliteBinding } {
  if (path !== ':memory:' && !path.startsWith('file:')) mkdirSync(dirname(path), { recursive: true });
  const binding = sqliteBinding(bindingName);
  const database = binding.open(path);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('busy_timeout = 5000');
  // 8 MiB of page cache instead of 2: the index pages the writes touch stay in memory; more
  // is resident memory for pages the operating system's cache holds anyway.
  database.pragma('cache_size = -8192');
  // A log that a burst of writes grew is cut back to this size once a checkpoint lets it
  // start over, instead of keeping its largest size on disk.
  database.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
  // The same connection serves Kysely (reads, migrations, pruning) and the group commit's
  // prepared statements (sqlite/batch-writer.ts): the binding is synchronous, so a batch
  // transaction never interleaves with a Kysely statement.
  return { dialect: new SqliteDialect({ database: withStatementCache(database) }), database, binding };
}

/**
 * Kysely prepares every query anew; parsing and planning an upsert costs more than running
 * it, so statements are reused by their SQL text (least recently used ones dropped).
 * Reuse is safe: Kysely runs one query at a time on this connection and never streams here.
 */
function withStatementCache(database: SqliteConnection): SqliteDatabase {
  const cache = new LRUCache<string, SqliteStatement>({ max: STATEMENT_CACHE_SIZE });
  return {
    close: () => database.close(),
    prepare(sql: string): SqliteStatement {
      let statement = cache.get(sql);
      if (!statement) {
        statement = database.prepare(sql);
        cache.set(sql, statement);
      }
      return statement;
    },
  };
}
