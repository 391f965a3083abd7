/**
 * How the store's SQLite connection is set up (in its worker thread), and the check of the
 * file that comes before any connection is opened on it.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { StoreOpenError } from '../errors.js';
import { pragmaValue, type SqliteConnection } from './binding.js';

/** Bytes the write-ahead log's file is cut back to once it starts over. */
export const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;
/**
 * Pages (4 KiB) of log past which a commit checkpoints by itself. The store's own checkpoints
 * (writer-work.ts) keep the log far below it; it bounds the log when writes nothing there
 * counts (a migration, the watches) fill it.
 */
export const WAL_AUTOCHECKPOINT_PAGES = 4000;
/** Every SQLite database file starts with these 16 bytes. */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/**
 * The writer: WAL (readers never wait for the writer, a commit is one append to the log),
 * synchronous=NORMAL (a commit survives the process dying; only a power loss can take back
 * the last transactions), and on a new file incremental auto-vacuum, so that retention can give
 * space back to the file system. Both: a busy timeout instead of SQLITE_BUSY errors, and a
 * page cache of 8 MiB (the writer) or 4 MiB (the reader): the index pages the writes touch
 * stay in memory; more is resident memory for pages the operating system's cache holds anyway.
 */
export function configureConnection(database: SqliteConnection, role: 'writer' | 'reader'): SqliteConnection {
  database.pragma('busy_timeout = 5000');
  if (role === 'reader') {
    database.pragma('cache_size = -4096');
    return database;
  }
  const empty = Number(pragmaValue(database, 'page_count')) === 0;
  // Only takes effect before the first table is made (or by a VACUUM: see the migrations).
  if (empty) database.pragma('auto_vacuum = INCREMENTAL');
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('cache_size = -8192');
  // A log that a burst of writes grew is cut back to this size once a checkpoint lets it
  // start over, instead of keeping its largest size on disk.
  database.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
  database.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
  return database;
}

/**
 * Refuses a file that exists but is not an SQLite database, before SQLite opens (and might
 * write to) it. A missing or empty file is a new database.
 */
export function checkSqliteFile(path: string): void {
  if (path === ':memory:' || path.startsWith('file:')) return;
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new StoreOpenError(`${path}: cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`, { cause: error });
  }
  try {
    const head = Buffer.alloc(SQLITE_HEADER.length);
    const read = readSync(fd, head, 0, head.length, 0);
    if (read === 0) return;
    if (read < head.length || !head.equals(SQLITE_HEADER)) {
      throw new StoreOpenError(`${path} is not an SQLite database (DATABASE_URL); it was left unchanged`);
    }
  } finally {
    closeSync(fd);
  }
}
