/**
 * An SQLite worker stopped (as a missed deadline stops it) inside each kind of operation: a
 * group commit, each watch transaction, a retention pass, a history read, a migration's step. Each time, the
 * operation either happened whole and answered, or failed saying the worker stopped and left
 * nothing behind; and the next operation works on a new thread. A transaction asked for on the
 * main thread is refused (each runs whole in the writer's thread); there, one function runs
 * every transaction: Kysely's own is refused, a query through the database inside a
 * transaction is part of it, a transaction inside another is refused, the gate can refuse a
 * commit, and the error that ended a transaction SQLite rolled back by itself is the one thrown.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as turn } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { KyselyHistoryStore } from '../../src/store/history/history-store.js';
import { pragmaValue, sqliteBinding, type SqliteConnection } from '../../src/store/sqlite/binding.js';
import { SqliteMainThreadTransactionError } from '../../src/store/sqlite/dialect.js';
import { SqliteWorkerTransactionError, workerKysely } from '../../src/store/sqlite/worker-kysely.js';
import { SqliteNestedTransactionError, SqliteTransactionEndedError, transactionRunner, type RunTransaction } from '../../src/store/sqlite/transaction.js';
import { openSqliteParts, type SqliteParts } from '../../src/store/sqlite/parts.js';
import { SqliteWorkerStoppedError, type SqliteWorker } from '../../src/store/sqlite/worker-client.js';
import type { WriteBatch } from '../../src/store/history/write-queue.js';
import type { MigrationEvent } from '../../src/store/migrations/migration-runner.js';
import type { Database } from '../../src/store/schema.js';
import { watchRow } from '../support/watch-rows.js';
import { insertLegacy, openLegacy, type LegacyCheck, type LegacyServer } from './legacy-layout.js';
import { sampleCheck } from './sample-check.js';

const dir = mkdtempSync(join(tmpdir(), 'observer-worker-stop-'));
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

async function open(): Promise<{ store: KyselyHistoryStore; parts: SqliteParts }> {
  const parts = await openSqliteParts(join(dir, `${cleanups.length}.db`), {}, () => {});
  const store = new KyselyHistoryStore({ ...parts, retention: { checkDays: 1, rollupDays: 30 } }, systemClock);
  cleanups.push(() => store.close());
  await store.migrate();
  return { store, parts };
}

const DAY = 24 * 3_600_000;
const stopped = () => new SqliteWorkerStoppedError('the SQLite worker stopped (by the test)');

type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** Runs `operation`, and stops the writer's thread after `turns` turns of the event loop. */
async function stopDuring<T>(thread: SqliteWorker, turns: number, operation: () => Promise<T>): Promise<Outcome<T>> {
  const outcome = operation().then(
    (value): Outcome<T> => ({ ok: true, value }),
    (error: unknown): Outcome<T> => ({ ok: false, error }),
  );
  for (let i = 0; i < turns; i++) await turn();
  thread.stop(stopped());
  return outcome;
}

/**
 * Tries `operation` with the stop a turn later each time, until it failed `failures` times
 * (and at most `tries` times); `check` says after each what the database holds.
 */
async function stopRepeatedly<T>(
  thread: SqliteWorker,
  operation: (i: number) => Promise<T>,
  check: (i: number, outcome: Outcome<T>) => Promise<void>,
  { failures = 3, tries = 40 } = {},
): Promise<number> {
  let failed = 0;
  for (let i = 0; i < tries && failed < failures; i++) {
    const outcome = await stopDuring(thread, i % 8, () => operation(i));
    if (!outcome.ok) {
      failed += 1;
      expect(outcome.error).toBeInstanceOf(SqliteWorkerStoppedError);
      expect(String(outcome.error)).toMatch(/SQLite worker (stopped|did not answer)/);
    }
    await check(i, outcome);
  }
  return failed;
}

function batchOf(i: number, n: number): WriteBatch {
  const checks = Array.from({ length: n }, (_, j) => ({ ...sampleCheck(i * n + j) }));
  return { id: randomUUID(), settled: [], checks, lookups: [], counters: new Map([['totalChecks', n]]), expireBefore: null };
}

describe('a transaction on SQLite', () => {
  it('is refused on the main thread at once, saying what to do, and nothing of it runs', async () => {
    const { parts } = await open();
    const { db } = parts;
    let ran = false;
    const refused = db.transaction().execute(async (trx) => {
      ran = true;
      await trx.insertInto('counters').values({ name: 'inside', value: 1 }).execute();
    });
    await expect(refused).rejects.toThrow(SqliteMainThreadTransactionError);
    await expect(refused).rejects.toThrow(/run whole inside the store’s writer thread/);
    expect(ran).toBe(false);
    // Single statements go on as before.
    await db.insertInto('counters').values({ name: 'after', value: 1 }).execute();
    expect((await db.selectFrom('counters').select('name').execute()).map((row) => row.name)).toEqual(['after']);
  });
});

describe('transactions in the SQLite writer thread', () => {
  type Db = { counters: { name: string; value: number } };
  function writer(beforeCommit: () => void = () => {}): { connection: SqliteConnection; db: Kysely<Db>; runTransaction: RunTransaction } {
    const connection = sqliteBinding().open(join(dir, `kysely-${cleanups.length}.db`));
    connection.exec('CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)');
    const db = workerKysely<Db>(connection);
    cleanups.push(async () => {
      await db.destroy();
      connection.close();
    });
    return { connection, db, runTransaction: transactionRunner(connection, beforeCommit) };
  }
  const names = async (db: Kysely<Db>) => (await db.selectFrom('counters').select('name').orderBy('name').execute()).map((row) => row.name);
  const insert = (db: Kysely<Db>, name: string) => db.insertInto('counters').values({ name, value: 1 }).execute();

  it('refuses Kysely’s own transaction at once, saying what to use, and nothing of it runs', async () => {
    const { db } = writer();
    let ran = false;
    const refused = db.transaction().execute(async (trx) => {
      ran = true;
      await insert(trx, 'inside');
    });
    await expect(refused).rejects.toThrow(SqliteWorkerTransactionError);
    await expect(refused).rejects.toThrow(/runTransaction/);
    expect(ran).toBe(false);
    expect(await names(db)).toEqual([]);
  });

  it('runs a query through the database inside a transaction as part of it: rolled back with it, or committed with it', async () => {
    const { db, runTransaction } = writer();
    await expect(
      runTransaction(async () => {
        await insert(db, 'first');
        await insert(db, 'second');
        throw new Error('the work failed');
      }),
    ).rejects.toThrow('the work failed');
    expect(await names(db)).toEqual([]);
    // Through a Kysely made from it too (the migrations count statements with a plugin).
    const counted = db.withPlugin({ transformQuery: ({ node }) => node, transformResult: async ({ result }) => result });
    await runTransaction(async () => {
      await insert(db, 'first');
      await insert(counted, 'second');
    });
    expect(await names(db)).toEqual(['first', 'second']);
  });

  it('refuses a transaction begun inside another, and rolls the outer one back', async () => {
    const { db, connection, runTransaction } = writer();
    const nested = runTransaction(async () => {
      await insert(db, 'outer');
      await runTransaction(() => insert(db, 'inner'));
    });
    await expect(nested).rejects.toThrow(SqliteNestedTransactionError);
    expect(connection.inTransaction).toBe(false);
    expect(await names(db)).toEqual([]);
  });

  it('refuses work that ended its transaction itself', async () => {
    const { db, runTransaction } = writer();
    await expect(
      runTransaction(async () => {
        await insert(db, 'inside');
        await sql`COMMIT`.execute(db);
      }),
    ).rejects.toThrow(SqliteTransactionEndedError);
  });

  it('commits nothing once the gate refuses, and throws what the gate said', async () => {
    let open = true;
    const { db, runTransaction } = writer(() => {
      if (!open) throw Object.assign(new Error('stopped before this commit'), { code: 'SQLITE_WORKER_STOPPED' });
    });
    await runTransaction(() => insert(db, 'before'));
    open = false;
    await expect(runTransaction(() => insert(db, 'after'))).rejects.toMatchObject({ code: 'SQLITE_WORKER_STOPPED' });
    expect(await names(db)).toEqual(['before']);
  });

  it('throws the error that ended a transaction SQLite rolled back by itself (a full database), not what ROLLBACK says', async () => {
    const { db, connection, runTransaction } = writer();
    await runTransaction(() => insert(db, 'room'));
    // The file may not grow past its size now: the next pages it needs make it "full".
    const pages = Number(pragmaValue(connection, 'page_count'));
    connection.pragma(`max_page_count = ${pages}`);
    const big = 'x'.repeat(64 * 1024);
    const full = runTransaction(async () => {
      for (let i = 0; i < 4; i++) await db.insertInto('counters').values({ name: `${big}${i}`, value: i }).execute();
    });
    await expect(full).rejects.toMatchObject({ code: 'SQLITE_FULL' });
    expect(connection.inTransaction).toBe(false);
    // Room again: the next transaction commits.
    connection.pragma(`max_page_count = ${pages * 100}`);
    await runTransaction(() => insert(db, 'again'));
    expect(await names(db)).toEqual(['again', 'room']);
  });
});

describe('a request to an SQLite worker', () => {
  it('fails past its deadline, stopping the worker, and the next request runs on a new thread', async () => {
    const { parts } = await open();
    const { db } = parts;
    const writer = parts.threads.writer;
    const generation = await writer.generation();
    writer.deadlineMs = 50;
    // Counts to 5 million: far longer than the deadline (a raw statement: the writer runs it).
    const slow = sql`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000000) SELECT count(*) AS n FROM c`.execute(db);
    await expect(slow).rejects.toThrow(/did not answer a query within 50 ms: it was stopped/);
    expect(writer.running).toBeNull();
    writer.deadlineMs = 30_000;
    await db.insertInto('counters').values({ name: 'after', value: 1 }).execute();
    expect(await db.selectFrom('counters').select('name').execute()).toEqual([{ name: 'after' }]);
    expect(writer.running).toBe(generation + 1);
  });
});

describe('the SQLite writer stopped inside an operation', () => {
  it('a group commit: all of a batch or none of it, and the next one is written', async () => {
    const { parts } = await open();
    const n = 500;
    let committed = 0;
    const failed = await stopRepeatedly(
      parts.threads.writer,
      (i) => Promise.resolve(parts.writer(batchOf(i, n))),
      async (_i, outcome) => {
        const checks = Number((await parts.db.selectFrom('checks').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
        const counter = await parts.db.selectFrom('counters').select('value').where('name', '=', 'totalChecks').executeTakeFirst();
        expect(checks).toBe(outcome.ok ? committed + n : committed);
        expect(Number(counter?.value ?? 0)).toBe(checks);
        committed = checks;
      },
    );
    expect(failed).toBeGreaterThan(0);
    await parts.writer(batchOf(1000, n));
    const checks = await parts.db.selectFrom('checks').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    expect(Number(checks.n)).toBe(committed + n);
  });

  it('a saved observation: the watch row and its event together or neither', async () => {
    const { store, parts } = await open();
    const { watches } = store;
    await watches.insert(watchRow('w', { verified_at: 1 }));
    let sequence = 0;
    const failed = await stopRepeatedly(
      parts.threads.writer,
      async (i) => {
        const watch = (await watches.get('w'))!;
        return watches.saveObservation(watch, { state: i % 2 ? 'online' : 'offline', failures: 0, fail_since: null, above: 0, last_checked_at: i }, { kind: 'change', body: '{}', now: i });
      },
      async (_i, outcome) => {
        const watch = (await watches.get('w'))!;
        expect(watch.sequence).toBe(sequence + (outcome.ok ? 1 : 0));
        sequence = watch.sequence;
        const events = await parts.db.selectFrom('watch_events').select('sequence').where('watch_id', '=', 'w').execute();
        expect(events.map((event) => event.sequence).sort((a, b) => a - b)).toEqual(Array.from({ length: watch.sequence }, (_, k) => k + 1));
      },
    );
    expect(failed).toBeGreaterThan(0);
    const before = (await watches.get('w'))!;
    expect(await watches.saveObservation(before, { state: 'online', failures: 0, fail_since: null, above: 0, last_checked_at: 99 }, { kind: 'change', body: '{}', now: 99 })).toBe(true);
    expect((await watches.get('w'))!.sequence).toBe(before.sequence + 1);
  });

  it('a creation within the caps: the watch whole or not at all, the caps still counted', async () => {
    const { store, parts } = await open();
    const { watches } = store;
    const caps = { unverifiedPerClient: 1000, perClient: 1000, perServer: 1000, max: 1000 };
    const created = new Set<string>();
    const failed = await stopRepeatedly(
      parts.threads.writer,
      (i) => watches.insertWithinCaps(watchRow(`c${i}`), caps),
      async (i, outcome) => {
        if (outcome.ok) created.add(`c${i}`);
        const rows = await parts.db.selectFrom('watches').select('id').execute();
        expect(new Set(rows.map((row) => row.id))).toEqual(created);
      },
    );
    expect(failed).toBeGreaterThan(0);
    expect(await watches.insertWithinCaps(watchRow('last'), caps)).toBeNull();
    expect(await watches.get('last')).toBeDefined();
  });

  it('a finished delivery attempt: the event moved on and the attempt logged together or neither', async () => {
    const { store, parts } = await open();
    const { watches } = store;
    await watches.insert(watchRow('d', { verified_at: 1 }));
    let sequence = 0;
    const failed = await stopRepeatedly(
      parts.threads.writer,
      async (i) => {
        const watch = (await watches.get('d'))!;
        sequence = watch.sequence + 1;
        await watches.saveObservation(watch, { state: 'online', failures: 0, fail_since: null, above: 0, last_checked_at: i }, { kind: 'online', body: '{}', now: 1 });
        const event = (await parts.db.selectFrom('watch_events').selectAll().where('watch_id', '=', 'd').where('sequence', '=', watch.sequence + 1).executeTakeFirstOrThrow());
        expect(await watches.leaseEvent(event, 10, 1_000, `t${i}`)).toBe(true);
        return watches.finishAttempt({ watch_id: 'd', sequence: event.sequence, kind: 'online', attempt: 1, at: 20, status_code: 204, error: null }, { outcome: 'delivered' }, 1000, `t${i}`);
      },
      async (_i, outcome) => {
        const events = await parts.db.selectFrom('watch_events').select(['sequence', 'outcome']).where('watch_id', '=', 'd').orderBy('sequence').execute();
        const logged = new Set((await watches.deliveries('d', 1000)).map((row) => row.sequence));
        for (const event of events) expect(logged.has(event.sequence)).toBe(event.outcome === 'delivered');
        const attempted = events.find((event) => event.sequence === sequence);
        if (outcome.ok) expect(attempted?.outcome).toBe('delivered');
        else expect(attempted?.outcome ?? null).toBeNull();
      },
      { failures: 3, tries: 60 },
    );
    expect(failed).toBeGreaterThan(0);
  });

  it('a retention pass: what it removed stays removed, and the next pass finishes it', async () => {
    const { store, parts } = await open();
    const old = Date.now() - 3 * 24 * 3600_000;
    const checks = Array.from({ length: 400 }, (_, j) => ({ ...sampleCheck(j % 20), checkedAt: old + j * 1000 }));
    await parts.writer({ id: randomUUID(), settled: [], checks, lookups: [], counters: new Map(), expireBefore: null });
    const count = async () =>
      Number((await parts.db.selectFrom('checks').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    let left = await count();
    const failed = await stopRepeatedly(
      parts.threads.writer,
      () => store.prune(),
      async () => {
        const now = await count();
        expect(now).toBeLessThanOrEqual(left);
        left = now;
      },
      { failures: 1, tries: 8 },
    );
    expect(failed).toBeGreaterThan(0);
    await store.prune();
    expect(await count()).toBe(0);
  });

  it('a history read: answered or failed, and the next one answers', async () => {
    const { parts } = await open();
    await parts.writer(batchOf(0, 1));
    // The first read starts the reader's thread (the writer answers it meanwhile).
    await parts.readHistory('s0', '24h', Date.now());
    while (!parts.threads.reader.up) await turn();
    const failed = await stopRepeatedly(
      parts.threads.reader,
      () => parts.readHistory('s0', '24h', Date.now()),
      async (_i, outcome) => {
        if (outcome.ok) expect(outcome.value?.server.id).toBe('s0');
      },
      // A one-row read often ends before the stop lands: enough tries that one is caught.
      { failures: 1, tries: 64 },
    );
    expect(failed).toBeGreaterThan(0);
    expect((await parts.readHistory('s0', '24h', Date.now()))?.server.id).toBe('s0');
  });
});

describe('the SQLite writer stopped inside a migration step', () => {
  /** Positions of the copy from here on are keys of the sorted rows (history-layout.ts). */
  const SORTED = 2 ** 40;
  const SERVERS = 6;
  const CHECKS_PER_SERVER = 40;
  const TOTAL = SERVERS * CHECKS_PER_SERVER;

  /** A database in the layout before migration 0003, holding TOTAL checks. */
  async function legacyFile(path: string): Promise<void> {
    const db = await openLegacy({ kind: 'sqlite', path });
    const now = Date.now();
    const servers: LegacyServer[] = Array.from({ length: SERVERS }, (_, i) => ({
      id: `server-${i}`, edition: 'java', host: `s${i}.example.com`, port: 25565, first_seen: now - DAY, last_seen: now,
      record_players: 5, last_online: 1, players_online: 1, players_max: 10, clients_24h: 0, trend_score: i,
    }));
    const checks: LegacyCheck[] = servers.flatMap((server) =>
      Array.from({ length: CHECKS_PER_SERVER }, (_, k) => ({
        server_id: server.id, checked_at: now - k * 60_000, online: k % 3 === 0 ? 0 : 1, players_online: k % 3 === 0 ? null : k % 10,
        players_max: 10, latency_ms: 12.5, version: '1.21.4',
      })),
    );
    await insertLegacy(db, 'servers', servers);
    await insertLegacy(db, 'checks', checks);
    await db.destroy();
  }

  const count = async (db: Kysely<Database>, query: string) => Number((await sql.raw<{ n: number }>(query).execute(db)).rows[0]?.n ?? 0);

  it('fails that step whole with a clear error, and the next run resumes where the last commit left it and completes', async () => {
    const path = join(dir, 'migrating.db');
    await legacyFile(path);
    // Eight steps of each stage of the copy: each step is a transaction of its own.
    const parts = await openSqliteParts(path, { migrationRowsPerStep: TOTAL / 8 }, () => {});
    const storeWith = (onMigration: (event: MigrationEvent) => void) =>
      new KyselyHistoryStore({ ...parts, retention: { checkDays: 30, rollupDays: 30 } }, systemClock, { onMigration });
    const positions = new Set<number>();
    let failures = 0;
    // Each attempt is stopped during the step after its first, second or third commit.
    for (let attempt = 0; attempt < 60; attempt++) {
      let commits = 0;
      const store = storeWith((event) => {
        if (event.kind === 'committed' && ++commits === 1 + (attempt % 3)) {
          // Its next step is sent at once: the stop comes while the writer runs it.
          void turn().then(() => parts.threads.writer.stop(stopped()));
        }
      });
      const outcome = await store.migrate().then(
        () => null,
        (error: unknown) => error,
      );
      if (outcome === null) break;
      failures += 1;
      expect(outcome).toBeInstanceOf(SqliteWorkerStoppedError);
      expect(String(outcome)).toMatch(/SQLite worker (was )?stopped/);
      // Nothing half-applied: the old layout whole until the copy's last transaction, the new one whole after it.
      const applied = (await sql<{ name: string }>`SELECT name FROM kysely_migration`.execute(parts.db)).rows.map((row) => row.name);
      if (applied.includes('0003_history_layout')) {
        expect(await count(parts.db, 'SELECT count(*) AS n FROM checks')).toBe(TOTAL);
        expect(await count(parts.db, 'SELECT sum(checks) AS n FROM check_hours')).toBe(TOTAL);
      } else {
        expect(await count(parts.db, 'SELECT count(*) AS n FROM checks WHERE server_id IS NOT NULL')).toBe(TOTAL);
        const progress = await sql<{ position: number }>`SELECT position FROM observer_migration_progress`.execute(parts.db).catch(() => ({ rows: [] }));
        for (const row of progress.rows) {
          const position = Number(row.position);
          positions.add(position);
          // The copy so far matches its recorded position exactly: sorted up to an old rowid,
          // then gathered up to a key of the sorted rows, each with its hour.
          const sorting = position < SORTED;
          expect(await count(parts.db, 'SELECT count(*) AS n FROM checks_sorting')).toBe(sorting ? await count(parts.db, `SELECT count(*) AS n FROM checks WHERE id <= ${position}`) : TOTAL);
          const gathered = sorting ? 0 : await count(parts.db, `SELECT count(*) AS n FROM checks_sorting WHERE key <= ${position}`);
          expect(await count(parts.db, 'SELECT count(*) AS n FROM checks_next')).toBe(gathered);
          expect(await count(parts.db, 'SELECT coalesce(sum(checks), 0) AS n FROM check_hours')).toBe(gathered);
        }
      }
    }
    expect(failures).toBeGreaterThan(3);
    // Some stops came in the middle of each stage of the copy, after some of its steps had committed.
    expect([...positions].some((position) => position > 0 && position < SORTED)).toBe(true);
    expect([...positions].some((position) => position > SORTED)).toBe(true);
    const store = storeWith(() => {});
    cleanups.push(() => store.close());
    await store.migrate();
    expect(store.migration()).toBeNull();
    expect(await count(parts.db, 'SELECT count(*) AS n FROM checks')).toBe(TOTAL);
    expect(await count(parts.db, 'SELECT sum(checks) AS n FROM check_hours')).toBe(TOTAL);
    expect(await count(parts.db, 'SELECT count(*) AS n FROM servers')).toBe(SERVERS);
    const history = await store.history('server-1', '24h');
    expect(history?.buckets.reduce((sum, bucket) => sum + bucket.checks, 0)).toBe(CHECKS_PER_SERVER);
  });
});
