/**
 * WAL checkpoints from a worker thread (sqlite/checkpointer.ts), on real SQLite files: the
 * service's connection stops checkpointing by itself, the worker's checkpoints land in the
 * database file and keep the log from growing, and where the worker cannot run the connection
 * checkpoints by itself as before.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pragmaValue, sqliteBinding, type SqliteConnection } from '../../src/store/sqlite/binding.js';
import { afterAll, afterEach, expect, it } from 'vitest';
import { startCheckpointer, type Checkpointer } from '../../src/store/sqlite/checkpointer.js';
import { createSqliteDialect, WAL_SIZE_LIMIT_BYTES } from '../../src/store/sqlite/dialect.js';
import { openStore } from '../../src/store/index.js';
import { sampleCheck } from './sample-check.js';

const dir = mkdtempSync(join(tmpdir(), 'observer-checkpoint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const open: Array<{ db: SqliteConnection; checkpointer: Checkpointer | null }> = [];
afterEach(async () => {
  for (const { db, checkpointer } of open.splice(0)) {
    await checkpointer?.stop();
    db.close();
  }
});

let files = 0;
function walDatabase(): { db: SqliteConnection; path: string } {
  const path = join(dir, `db-${files++}.sqlite`);
  const db = sqliteBinding().open(path);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB)');
  return { db, path };
}

const MIB = 1024 * 1024;
const sizeOf = (path: string) => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

/** One transaction of `mib` MiB of fresh pages. */
function writeMiB(db: SqliteConnection, mib: number): void {
  // Made by SQLite itself: libsql cannot bind a Buffer.
  const insert = db.prepare('INSERT INTO blobs (data) VALUES (randomblob(65536))');
  db.transaction(() => {
    for (let i = 0; i < mib * 16; i++) insert.run();
  })();
}

/**
 * Whether the last checkpoint copied every frame of the log into the database file, read from
 * the WAL-index (the `-shm` file; sqlite.org/walformat.html, "The WAL-Index Format"): `mxFrame`
 * of its header at byte 16 and `nBackfill` of its checkpoint information at byte 96, both in
 * native (here little-endian) order. SQLite sets `nBackfill` once the file is synced, and the
 * next commit after that starts the log over. Reading the file makes no checkpoint.
 */
function checkpointedAll(path: string): boolean {
  const index = readFileSync(`${path}-shm`);
  const mxFrame = index.readUInt32LE(16);
  return mxFrame > 0 && index.readUInt32LE(96) === mxFrame;
}

async function until(condition: () => boolean, what: string): Promise<void> {
  // A generous bound for a loaded machine: this waits for an event, it does not time anything.
  const deadline = Date.now() + 30_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

it('checkpoints from the worker: the connection stops checkpointing itself, pages reach the file, the log stays small', async () => {
  const { db, path } = walDatabase();
  const checkpointer = startCheckpointer(db, path, { intervalMs: 50 });
  open.push({ db, checkpointer });
  expect(await checkpointer!.ready).toBe(true);
  expect(pragmaValue(db, 'wal_autocheckpoint')).toBe(0);

  const rounds = 6;
  for (let round = 1; round <= rounds; round++) {
    writeMiB(db, 2);
    // Only a checkpoint moves pages from the log into the database file, and this
    // connection no longer makes any: the file grows because the worker checkpointed.
    await until(() => sizeOf(path) >= round * 2 * MIB, `checkpoint ${round}`);
    // Its end, not a time: the next commit then starts the log over.
    await until(() => checkpointedAll(path), `the end of checkpoint ${round}`);
  }
  // Every commit after the first began on a fully checkpointed log and started it over, so the
  // log never held more than one round (the control below holds all 12 MiB). Waiting for the
  // file to grow alone was not enough: under load a commit could begin while the worker was
  // still syncing, keep the log, and let it reach everything written (seen once in CI).
  expect(sizeOf(`${path}-wal`)).toBeLessThan(2 * 2 * MIB);
  expect((db.prepare('SELECT count(*) AS n FROM blobs').get() as { n: number }).n).toBe(rounds * 2 * 16);
});

it('without the worker the same writes pile up in the log (the control for the test above)', () => {
  const { db, path } = walDatabase();
  open.push({ db, checkpointer: null });
  db.pragma('wal_autocheckpoint = 0');
  for (let round = 1; round <= 6; round++) writeMiB(db, 2);
  expect(sizeOf(`${path}-wal`)).toBeGreaterThanOrEqual(12 * MIB);
  expect(sizeOf(path)).toBeLessThan(MIB);
});

it('when the worker cannot start, says so once and the connection keeps checkpointing by itself', async () => {
  const { db, path } = walDatabase();
  const errors: unknown[] = [];
  const checkpointer = startCheckpointer(db, path, { module: join(dir, 'no-such-module.js'), onError: (error) => errors.push(error) });
  open.push({ db, checkpointer });
  expect(await checkpointer!.ready).toBe(false);
  expect(errors).toHaveLength(1);
  expect(pragmaValue(db, 'wal_autocheckpoint')).toBe(1000);
  writeMiB(db, 5);
  // SQLite's own automatic checkpoint (1000 pages) moved the pages into the file.
  expect(sizeOf(path)).toBeGreaterThan(MIB);
});

it('stop gives checkpoints back to the connection and ends the worker', async () => {
  const { db, path } = walDatabase();
  const errors: unknown[] = [];
  const checkpointer = startCheckpointer(db, path, { onError: (error) => errors.push(error) });
  open.push({ db, checkpointer: null });
  expect(await checkpointer!.ready).toBe(true);
  await checkpointer!.stop();
  expect(pragmaValue(db, 'wal_autocheckpoint')).toBe(1000);
  expect(errors).toEqual([]);
  await checkpointer!.stop();
});

it('has nothing to do for an in-memory database', () => {
  const db = sqliteBinding().open(':memory:');
  open.push({ db, checkpointer: null });
  expect(startCheckpointer(db, ':memory:')).toBeNull();
});

it("a store on a file checkpoints from the worker, and close() leaves a whole file", async () => {
  const path = join(dir, 'store.sqlite');
  const store = await openStore({ database: { kind: 'sqlite', path }, checkRetentionDays: 30 });
  for (let i = 0; i < 2000; i++) store.recordCheck(sampleCheck(i));
  await store.flush();
  const before = sizeOf(path);
  // The rows are committed to the log; the worker, not the store's connection, moves them.
  await until(() => sizeOf(path) > before, 'a checkpoint of the store');
  await store.close();
  const db = sqliteBinding().open(path, { readonly: true });
  try {
    expect(pragmaValue(db, 'integrity_check')).toBe('ok');
    expect((db.prepare('SELECT count(*) AS n FROM checks').get() as { n: number }).n).toBe(2000);
  } finally {
    db.close();
  }
});

it('starts the worker once a thousand rows are recorded, not for a light start (expiry, counters, a few checks)', () => {
  const out = execFileSync(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'light-start-process.ts'), join(dir, 'light.sqlite')]);
  const [light, busy] = out.toString().trim().split('\n').map(Number);
  expect(busy).toBeGreaterThan(light!);
});

it('cuts the log back to its size limit once it starts over after a burst, where a bare connection keeps it', () => {
  const burstMiB = WAL_SIZE_LIMIT_BYTES / MIB + 16;
  const logAfterBurst = (db: SqliteConnection, path: string) => {
    // Checkpoints only when asked, as with the worker under a load that never lets one finish.
    db.pragma('wal_autocheckpoint = 0');
    writeMiB(db, burstMiB);
    db.pragma('wal_checkpoint(PASSIVE)');
    writeMiB(db, 1);
    return sizeOf(`${path}-wal`);
  };
  const bare = walDatabase();
  open.push({ db: bare.db, checkpointer: null });
  expect(logAfterBurst(bare.db, bare.path)).toBeGreaterThan(burstMiB * MIB);

  const path = join(dir, `limited-${files++}.sqlite`);
  const { database } = createSqliteDialect(path);
  open.push({ db: database, checkpointer: null });
  database.exec('CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB)');
  expect(logAfterBurst(database, path)).toBeLessThanOrEqual(WAL_SIZE_LIMIT_BYTES);
}, 60_000);
