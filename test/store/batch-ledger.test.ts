/**
 * The group commit's ledger (batch-ledger.ts) on both databases: a batch the database keeps
 * refusing is set aside in `dead_batches`, counted in a metric and logged, and the rows behind
 * it are written; a batch retried after its commit went through but its answer was lost (the
 * connection cut right after COMMIT, by a proxy in front of the real PostgreSQL) counts once.
 * A database that cannot write now (an SQLite file that may not grow) never gets a batch set
 * aside: the batches wait and are all written once it can.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createMetrics } from '../../src/metrics/index.js';
import { openStore, type HistoryStore } from '../../src/store/index.js';
import { sqliteBinding } from '../../src/store/sqlite/binding.js';
import { createSqliteBatchWriter } from '../../src/store/sqlite/batch-writer.js';
import { transactionRunner } from '../../src/store/sqlite/transaction.js';
import type { CheckRecord } from '../../src/store/types.js';
import { refusedByDatabase } from '../../src/store/history/batch-ledger.js';
import { KyselyHistoryStore } from '../../src/store/history/history-store.js';
import { createPostgresBatchWriter } from '../../src/store/postgres/batch-writer.js';
import { createPostgresPool } from '../../src/store/postgres/pool.js';
import type { Database } from '../../src/store/schema.js';
import { openSqliteParts } from '../../src/store/sqlite/parts.js';
import { ATTEMPTS_BEFORE_SET_ASIDE, BatchSetAsideError, type WriteBatch } from '../../src/store/history/write-queue.js';
import { FakeClock } from '../support/clock.js';
import { parseExposition, value } from '../support/prometheus.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres-databases.js';

const T0 = Date.parse('2026-11-22T12:00:00.000Z');
const dir = mkdtempSync(join(tmpdir(), 'observer-ledger-'));
const databases: TestDatabase[] = [];
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  for (const database of databases) await database.drop();
});

function check(serverId: string, at = T0, host = 'mc.example.com'): CheckRecord {
  return { serverId, edition: 'java', host, port: 25565, checkedAt: at, online: true, playersOnline: 4, playersMax: 20, latencyMs: 3 };
}

interface Target {
  config: Parameters<typeof openStore>[0];
  rows(table: string): Promise<Record<string, unknown>[]>;
}

const targets: Array<[string, () => Promise<Target>]> = [
  [
    'SQLite',
    async () => {
      const path = join(dir, `${randomUUID()}.db`);
      return {
        config: { database: { kind: 'sqlite', path }, checkRetentionDays: 30 },
        async rows(table) {
          const db = sqliteBinding().open(path, { readonly: true });
          try {
            return db.prepare(`SELECT * FROM ${table}`).all() as Record<string, unknown>[];
          } finally {
            db.close();
          }
        },
      };
    },
  ],
  [
    'PostgreSQL',
    async () => {
      const database = await createTestDatabase('observer_ledger');
      databases.push(database);
      return {
        config: { database: { kind: 'postgres', url: database.url }, checkRetentionDays: 30 },
        async rows(table) {
          const client = new pg.Client({ connectionString: database.url });
          await client.connect();
          try {
            return (await client.query(`SELECT * FROM ${table}`)).rows as Record<string, unknown>[];
          } finally {
            await client.end();
          }
        },
      };
    },
  ],
];

describe.each(targets)('%s', (_name, create) => {
  it('sets a batch the database keeps refusing aside, counts and logs it, and writes the rows behind it', async () => {
    const target = await create();
    const errors: unknown[] = [];
    const store = await openStore(target.config, new FakeClock(T0), {
      onError: (error) => errors.push(error),
      writes: { retryMinMs: 5, retryMaxMs: 20 },
      pruneDelayMs: 3_600_000,
    });
    const metrics = createMetrics({ history: () => store.health() });
    try {
      const [refused, before, after] = [randomUUID(), randomUUID(), randomUUID()];
      // A check without a host breaks a NOT NULL constraint on either database: every attempt fails.
      store.recordCheck({ ...check(refused), host: null as unknown as string });
      store.recordCheck(check(before));
      store.count({ totalChecks: 2 });
      await store.flush();
      store.recordCheck(check(after, T0 + 1));
      store.count({ totalChecks: 1 });
      await store.flush();

      // The refused batch, whole, is in the dead-letter table; the check queued after it is written.
      const dead = await target.rows('dead_batches');
      expect(dead).toHaveLength(1);
      expect(Number(dead[0]!.attempts)).toBeGreaterThanOrEqual(5);
      const body = JSON.parse(String(dead[0]!.body)) as { checks: CheckRecord[]; counters: Record<string, number> };
      expect(body.checks.map((c) => c.serverId)).toEqual([refused, before]);
      expect(body.counters).toEqual({ totalChecks: 2 });
      expect((await store.history(after, '24h'))?.checks).toBe(1);
      expect(await store.history(before, '24h')).toBeNull();
      expect((await store.stats()).totalChecks).toBe(1);

      expect(store.health()).toMatchObject({ state: 'ok', buffered: 0, deadLettered: 1 });
      expect(value(parseExposition(await metrics.scrape()), 'observer_history_dead_letter_total')).toBe(1);
      const setAside = errors.filter((e): e is BatchSetAsideError => e instanceof BatchSetAsideError);
      expect(setAside).toHaveLength(1);
      expect(setAside[0]!.message).toContain(String(dead[0]!.id));
    } finally {
      await store.close();
    }
  });
});

/** What a cutter cuts the connection at, once armed: the server's answer to a COMMIT, or the client's ROLLBACK. */
type Cut = 'commit answered' | 'rollback sent';

/**
 * A TCP proxy in front of PostgreSQL that, once armed, cuts the connection at one message
 * instead of passing it on: the server's CommandComplete of a COMMIT, or the client's ROLLBACK
 * query. Messages: a type byte, a length (which counts itself), the body; the client's first
 * one (startup) has no type byte.
 */
async function pgCutter(upstream: URL): Promise<{ url: string; arm(cut: Cut): void; cuts(): number; close(): Promise<void> }> {
  let armed: Cut | null = null;
  let cuts = 0;
  const sockets = new Set<net.Socket>();
  /** Passes `from`'s messages to `to` one at a time, and cuts both where `cutsAt` says. */
  const relay = (from: net.Socket, to: net.Socket, typed: boolean, cutsAt: (message: Buffer) => boolean) => {
    let pending = Buffer.alloc(0);
    let head = typed ? 1 : 0;
    from.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= head + 4) {
        const length = pending.readUInt32BE(head);
        if (pending.length < head + length) break;
        const message = pending.subarray(0, head + length);
        pending = pending.subarray(head + length);
        if (head === 1 && cutsAt(message)) {
          armed = null;
          cuts += 1;
          from.destroy();
          to.destroy();
          return;
        }
        head = 1;
        to.write(message);
      }
    });
  };
  const server = net.createServer((client) => {
    const db = net.connect(Number(upstream.port), upstream.hostname);
    sockets.add(client).add(db);
    client.on('close', () => db.destroy());
    db.on('close', () => client.destroy());
    client.on('error', () => {});
    db.on('error', () => {});
    // 'C': CommandComplete; 'Q': a simple query (how the driver sends ROLLBACK).
    relay(db, client, true, (m) => armed === 'commit answered' && m[0] === 0x43 && m.subarray(5, 11).toString() === 'COMMIT');
    relay(client, db, false, (m) => armed === 'rollback sent' && m[0] === 0x51 && /^rollback/i.test(m.subarray(5).toString()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(upstream);
  url.host = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return {
    url: url.toString(),
    arm: (cut) => void (armed = cut),
    cuts: () => cuts,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

it('counts a batch once on PostgreSQL when the connection drops after its COMMIT and the batch is retried', async () => {
  const database = await createTestDatabase('observer_ledger');
  databases.push(database);
  const proxy = await pgCutter(new URL(database.url));
  let store: HistoryStore | null = null;
  try {
    const errors: unknown[] = [];
    store = await openStore({ database: { kind: 'postgres', url: proxy.url }, checkRetentionDays: 30 }, new FakeClock(T0), {
      onError: (error) => errors.push(error),
      writes: { retryMinMs: 5, retryMaxMs: 20 },
      pruneDelayMs: 3_600_000,
    });
    const id = randomUUID();
    proxy.arm('commit answered');
    store.recordCheck(check(id));
    store.recordLookup(id, 'client-a');
    store.count({ totalChecks: 1, serverQueries: 1, totalRequests: 1 });
    await store.flush();
    expect(proxy.cuts()).toBe(1);
    // The first attempt's answer was lost: the queue saw a failure and wrote the batch again.
    expect(errors.length).toBeGreaterThanOrEqual(1);
    const stats = await store.stats();
    expect(stats).toMatchObject({ totalChecks: 1, serverQueries: 1, totalRequests: 1 });
    expect((await store.history(id, '24h'))?.checks).toBe(1);
    expect((await store.trends(10, null)).data.map((s) => [s.server_id, s.trend_score > 0])).toEqual([[id, true]]);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query('SELECT clients_24h FROM servers WHERE id = $1', [id]);
      expect(rows).toEqual([{ clients_24h: 1 }]);
      const hours = await client.query('SELECT sum(checks)::int AS checks FROM check_hours');
      expect(hours.rows).toEqual([{ checks: 1 }]);
      // The next batch forgets the first one's id: the ledger holds only the last batch's.
      store.recordCheck(check(randomUUID()));
      await store.flush();
      expect((await client.query('SELECT count(*)::int AS n FROM applied_batches')).rows).toEqual([{ n: 1 }]);
    } finally {
      await client.end();
    }
  } finally {
    await store?.close();
    await proxy.close();
  }
});

it('throws the error that refused a batch on PostgreSQL, not the lost connection of the ROLLBACK after it', async () => {
  const database = await createTestDatabase('observer_ledger');
  databases.push(database);
  const store = await openStore({ database: { kind: 'postgres', url: database.url }, checkRetentionDays: 30 });
  await store.close();
  const proxy = await pgCutter(new URL(database.url));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: createPostgresPool(proxy.url, () => {}) }) });
  try {
    const write = createPostgresBatchWriter(db);
    const batch = (checks: CheckRecord[]): WriteBatch => ({ id: randomUUID(), checks, lookups: [], counters: new Map(), expireBefore: null, settled: [] });
    proxy.arm('rollback sent');
    // A check without a host breaks a NOT NULL constraint: the database refuses the batch.
    const refused = await Promise.resolve(write(batch([{ ...check(randomUUID()), host: null as unknown as string }]))).then(
      () => null,
      (error: unknown) => error,
    );
    expect(proxy.cuts()).toBe(1);
    expect(refused).toMatchObject({ code: '23502' });
    expect(refusedByDatabase(refused)).toBe(true);
    // And a lost connection alone is never counted against a batch.
    expect(refusedByDatabase(new Error('Connection terminated unexpectedly'))).toBe(false);
    // The next batch gets a connection of its own and is written.
    const id = randomUUID();
    await write(batch([check(id)]));
    expect(await db.selectFrom('servers').select('id').execute()).toEqual([{ id }]);
  } finally {
    await db.destroy();
    await proxy.close();
  }
});

it('counts a batch written twice by the SQLite writer once, and forgets the ids its queue settled', async () => {
  const path = join(dir, `${randomUUID()}.db`);
  const store = await openStore({ database: { kind: 'sqlite', path }, checkRetentionDays: 30 }, new FakeClock(T0), { pruneDelayMs: 3_600_000 });
  await store.close();
  const database = sqliteBinding().open(path);
  try {
    const write = createSqliteBatchWriter(database, transactionRunner(database, () => undefined));
    const id = randomUUID();
    const batch: WriteBatch = {
      id: randomUUID(),
      checks: [check(id)],
      lookups: [{ server_id: id, client_hash: 'h1', seen_at: T0 }],
      counters: new Map([['totalChecks', 1]]),
      expireBefore: null,
      settled: [],
    };
    await write(batch);
    await write(batch);
    const one = (text: string) => database.prepare(text).get() as Record<string, unknown>;
    expect(one("SELECT value FROM counters WHERE name = 'totalChecks'")).toMatchObject({ value: 1 });
    expect(one('SELECT clients_24h, record_players FROM servers')).toMatchObject({ clients_24h: 1, record_players: 4 });
    expect(one('SELECT sum(checks) AS checks FROM check_hours')).toMatchObject({ checks: 1 });
    // The next batch of the same queue says the first is settled: its ledger row goes.
    await write({ ...batch, id: randomUUID(), checks: [], lookups: [], counters: new Map(), settled: [batch.id] });
    expect((database.prepare('SELECT id FROM applied_batches').all() as Array<{ id: string }>).map((r) => r.id)).not.toContain(batch.id);
  } finally {
    database.close();
  }
});

it('holds every batch while the SQLite file may not grow, sets none aside, and writes them all once it may', async () => {
  const parts = await openSqliteParts(join(dir, `${randomUUID()}.db`), {}, () => {});
  const errors: unknown[] = [];
  const store = new KyselyHistoryStore({ ...parts, retention: { checkDays: 30, rollupDays: 30 } }, new FakeClock(T0), {
    onError: (error) => errors.push(error),
    writes: { retryMinMs: 5, retryMaxMs: 20 },
    pruneDelayMs: 3_600_000,
  });
  try {
    await store.migrate();
    const id = randomUUID();
    store.recordCheck(check(id));
    await store.flush();
    // The writer's connection may not add a page to the file: the checks and look-ups of a
    // busy server make it "full" (SQLITE_FULL), and SQLite rolls their transaction back by
    // itself, as on a full disk.
    const pages = Number((await sql.raw<{ page_count: number }>('PRAGMA page_count').execute(parts.db)).rows[0]!.page_count);
    await sql.raw(`PRAGMA max_page_count = ${pages}`).execute(parts.db);
    const looks = 300;
    for (let i = 1; i <= looks; i++) {
      store.recordCheck(check(id, T0 + i));
      store.recordLookup(id, `client-${i}`);
    }
    store.count({ totalChecks: looks });
    await vi.waitFor(() => expect(store.health().failedWrites).toBeGreaterThan(3 * ATTEMPTS_BEFORE_SET_ASIDE), { timeout: 20_000, interval: 10 });
    expect(store.health()).toMatchObject({ state: 'down', buffered: 2 * looks, deadLettered: 0 });
    // What the log shows is the database's reason, not what a ROLLBACK after it said.
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.map((error) => (error as { code?: unknown }).code)).toEqual(errors.map(() => 'SQLITE_FULL'));

    await sql.raw(`PRAGMA max_page_count = ${pages * 1000}`).execute(parts.db);
    await store.flush();
    expect(store.health()).toMatchObject({ state: 'ok', buffered: 0, dropped: 0, deadLettered: 0 });
    const counted = await sql<{ checks: number; lookups: number; dead: number; total: number }>`SELECT
      (SELECT count(*) FROM checks) AS checks, (SELECT count(*) FROM lookups) AS lookups,
      (SELECT count(*) FROM dead_batches) AS dead, (SELECT value FROM counters WHERE name = 'totalChecks') AS total`.execute(parts.db);
    expect(counted.rows[0]).toEqual({ checks: looks + 1, lookups: looks, dead: 0, total: looks });
    expect((await store.history(id, '24h'))?.checks).toBe(looks + 1);
  } finally {
    await store.close();
  }
});
