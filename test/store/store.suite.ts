/**
 * One suite for every Store implementation (SQLite and PostgreSQL run the same tests).
 * Each test opens stores on a fresh, empty database; `query` reads that database over a
 * connection of its own, to see what was written rather than what the store says.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { Config } from '../../src/config/index.js';
import type { Edition } from '../../src/core/types.js';
import { InvalidCursorError, openStore, type HistoryStore, type StoreOptions } from '../../src/store/index.js';
import type { Clock } from '../../src/core/clock.js';
import type { CheckRecord } from '../../src/store/types.js';
import { FakeClock } from '../support/clock.js';

export interface StoreTarget {
  config: { database: Config['database']; checkRetentionDays: number; rollupRetentionDays?: number };
  query(text: string): Promise<Record<string, unknown>[]>;
}

export interface StoreBackend {
  name: string;
  /** A fresh, empty database (retention in days: raw checks, hourly rows; 30 and 30 unless given). */
  create(retention?: { checkDays?: number; rollupDays?: number }): Promise<StoreTarget>;
  /** Drops every database create() made. */
  dispose(): Promise<void>;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const T0 = Date.parse('2025-06-01T12:00:00.000Z');

/** A deterministic PRNG (mulberry32), so a failing ranking can be replayed. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function check(serverId: string, checkedAt: number, fields: Partial<CheckRecord> = {}): CheckRecord {
  return {
    serverId,
    edition: 'java' as Edition,
    host: 'mc.example.com',
    port: 25565,
    checkedAt,
    online: true,
    playersOnline: 0,
    playersMax: 100,
    latencyMs: 20,
    ...fields,
  };
}

/** Queues checks and waits for their group commit. */
async function record(store: HistoryStore, ...checks: CheckRecord[]): Promise<void> {
  for (const c of checks) store.recordCheck(c);
  await store.flush();
}

export function storeSuite(backend: StoreBackend): void {
  describe(`store on ${backend.name}`, () => {
    const opened: HistoryStore[] = [];
    async function open(target: StoreTarget, clock: Clock, options: StoreOptions = {}): Promise<HistoryStore> {
      const store = await openStore(target.config, clock, options);
      opened.push(store);
      return store;
    }
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((s) => s.close()));
    });
    afterAll(() => backend.dispose());

    it('applies its migrations at start, and again harmlessly on a second start', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const first = await open(target, clock);
      await record(first, check(randomUUID(), clock.now()));
      await first.close();
      const second = await open(target, clock);
      await second.migrate();
      expect((await second.trends(10, null)).data).toHaveLength(1);
    });

    it('knows a server once a check of it is written, until it is pruned', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const store = await open(target, clock);
      const id = randomUUID();
      expect(await store.knowsServer(id)).toBe(false);
      await record(store, check(id, clock.now()));
      expect(await store.knowsServer(id)).toBe(true);
      expect(await store.knowsServer(randomUUID())).toBe(false);
      clock.advance(31 * DAY);
      await store.prune();
      expect(await store.knowsServer(id)).toBe(false);
    });

    it('answers each of many servers asked about at once, known and unknown alike', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const store = await open(target, clock);
      const known: string[] = [randomUUID(), randomUUID(), randomUUID()];
      for (const id of known) await record(store, check(id, clock.now()));
      // More than one read's worth of ids, the known ones in different reads.
      const asked: string[] = Array.from({ length: 1_200 }, () => randomUUID());
      asked.splice(5, 1, known[0]!);
      asked.splice(600, 1, known[1]!);
      asked.splice(1_199, 1, known[2]!);
      const answers = await Promise.all(asked.map((id) => store.knowsServer(id)));
      expect(answers.filter(Boolean)).toHaveLength(3);
      for (const [i, id] of asked.entries()) expect(answers[i]).toBe(known.includes(id));
    });

    it('lists servers whose latest check is online and under 30 minutes old, with their fields', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const store = await open(target, clock);
      const now = clock.now();
      const [fresh, offline, old, edge, bedrock, ipv6] = Array.from({ length: 6 }, () => randomUUID());
      // 7 days of history for `fresh`: 3 of its 4 checks in the window were online; the
      // offline check 8 days ago is outside the window. Its record is from 2 days ago.
      const freshCheck = (at: number, fields: Partial<CheckRecord>) =>
        check(fresh!, at, { host: 'play.example.net', port: 25570, ...fields });
      await record(store, freshCheck(now - 8 * DAY, { online: false, playersOnline: null }));
      await record(store, freshCheck(now - 2 * DAY, { playersOnline: 90 }));
      await record(store, freshCheck(now - DAY, { online: false, playersOnline: null, playersMax: null }));
      await record(store, freshCheck(now - HOUR, { playersOnline: 12 }));
      await record(store, freshCheck(now - MINUTE, { playersOnline: 7, playersMax: 50 }));
      await record(store, check(offline!, now - 10 * MINUTE));
      await record(store, check(offline!, now - 5 * MINUTE, { online: false, playersOnline: null }));
      await record(store, check(old!, now - 31 * MINUTE));
      await record(store, check(edge!, now - 30 * MINUTE, { host: 'edge.example.org' }));
      await record(store, check(bedrock!, now, { edition: 'bedrock', host: 'pe.example.com', port: 19132 }));
      await record(store, check(ipv6!, now, { host: '2001:db8::1', port: 25566 }));

      const page = await store.trends(50, null);
      const byId = new Map(page.data.map((s) => [s.server_id, s]));
      expect([...byId.keys()].sort()).toEqual([fresh, edge, bedrock, ipv6].sort());
      expect(byId.get(fresh!)).toEqual({
        server_id: fresh,
        hostname: 'play.example.net',
        address: 'play.example.net:25570',
        port: 25570,
        edition: 'java',
        trend_score: 0.006951, // no clients; 7 / 1007 rounded down to 6 decimals
        is_online: true,
        stale: false,
        checked_at: new Date(now - MINUTE).toISOString(),
        players_online: 7,
        players_max: 50,
        record_players: 90,
        uptime_percentage: 75,
      });
      expect(byId.get(edge!)?.address).toBe('edge.example.org');
      expect(byId.get(bedrock!)).toMatchObject({ address: 'pe.example.com', port: 19132, edition: 'bedrock' });
      expect(byId.get(ipv6!)?.address).toBe('[2001:db8::1]:25566');
      expect(page).toMatchObject({ hasNext: false, nextCursor: null });

      // A minute later `edge` is 31 minutes old and leaves the list.
      clock.advance(MINUTE);
      expect((await store.trends(50, null)).data.map((s) => s.server_id)).not.toContain(edge);
    });

    it('keeps the newest check as the latest one when checks arrive out of order', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const store = await open(target, clock);
      const id = randomUUID();
      await record(store, check(id, clock.now(), { playersOnline: 3 }));
      await record(store, check(id, clock.now() - MINUTE, { online: false, playersOnline: null }));
      await record(store, check(id, clock.now() - 2 * MINUTE, { playersOnline: 40 }));
      const [server] = (await store.trends(10, null)).data;
      expect(server).toMatchObject({ server_id: id, players_online: 3, record_players: 40, uptime_percentage: 66.67 });
      expect(server?.checked_at).toBe(new Date(clock.now()).toISOString());
    });

    it('ranks by distinct clients of the last 24 hours, players breaking ties', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const store = await open(target, clock);
      const [pumped, twoClients, crowded, quiet] = Array.from({ length: 4 }, () => randomUUID());
      // One client asking a hundred times counts once.
      for (let i = 0; i < 100; i++) store.recordLookup(pumped!, 'client-a');
      store.recordLookup(twoClients!, 'client-a');
      store.recordLookup(twoClients!, 'client-b');
      await record(store, check(pumped!, clock.now(), { playersOnline: 10 }));
      await record(store, check(twoClients!, clock.now(), { playersOnline: 0 }));
      await record(store, check(crowded!, clock.now(), { playersOnline: 100_000 }));
      await record(store, check(quiet!, clock.now(), { playersOnline: 1 }));
      await store.flush(); // what the flush timer does within a second

      const page = await store.trends(10, null);
      expect(page.data.map((s) => [s.server_id, s.trend_score])).toEqual([
        [twoClients, 2],
        [pumped, 1.009900], // 1 + 10 / 1010
        [crowded, 0.990099], // 100000 / 101000
        [quiet, 0.000999],
      ]);
    });

    it('counts a look-up recorded before the server was first checked', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const store = await open(target, clock);
      const id = randomUUID();
      store.recordLookup(id, 'early-client');
      await store.flush();
      await record(store, check(id, clock.now()));
      store.recordLookup(id, 'early-client');
      store.recordLookup(id, 'second-client');
      await store.flush();
      expect((await store.trends(10, null)).data[0]?.trend_score).toBe(2);
    });

    it('stops counting a client after 24 hours and deletes its row', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const store = await open(target, clock);
      const id = randomUUID();
      store.recordLookup(id, 'client-a');
      await record(store, check(id, clock.now()));
      clock.advance(HOUR);
      store.recordLookup(id, 'client-b');
      await store.flush();
      expect(await target.query('SELECT server_id FROM lookups')).toHaveLength(2);

      clock.advance(23 * HOUR); // client-a: exactly 24 hours ago
      await record(store, check(id, clock.now()));
      await store.flush(); // expires look-ups, as the flush timer does at least once a minute
      expect((await store.trends(10, null)).data[0]?.trend_score).toBe(2);

      clock.advance(1000);
      await store.flush();
      expect((await store.trends(10, null)).data[0]?.trend_score).toBe(1);
      expect(await target.query('SELECT server_id FROM lookups')).toHaveLength(1);

      clock.advance(HOUR);
      await record(store, check(id, clock.now()));
      await store.flush();
      expect((await store.trends(10, null)).data[0]?.trend_score).toBe(0);
      expect(await target.query('SELECT server_id FROM lookups')).toHaveLength(0);
    });

    it('brings look-ups into the ranking within a second, without being asked', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const store = await open(target, clock);
      const id = randomUUID();
      await record(store, check(id, clock.now()));
      store.recordLookup(id, 'client-a');
      await vi.waitFor(async () => expect((await store.trends(1, null)).data[0]?.trend_score).toBe(1), {
        timeout: 3000,
        interval: 100,
      });
    });

    it('never writes the client key it is given', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const store = await open(target, clock);
      const id = randomUUID();
      store.recordLookup(id, 'opaque-client-key-7f3a');
      await store.flush();
      const rows = await target.query('SELECT * FROM lookups');
      expect(rows).toHaveLength(1);
      expect(JSON.stringify(rows)).not.toContain('opaque-client-key-7f3a');
    });

    it('pages through a few hundred servers: every ranked server exactly once at every page size', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const store = await open(target, clock);
      const rand = random(6);
      const expected: Array<{ id: string; clients: number; players: number }> = [];
      for (let i = 0; i < 320; i++) {
        const id = randomUUID();
        // Few distinct values, so that many servers tie on clients and on the whole score.
        const clients = Math.floor(rand() * 4);
        const players = [0, 0, 5, 50][Math.floor(rand() * 4)]!;
        for (let c = 0; c < clients; c++) store.recordLookup(id, `client-${c}`);
        const kind = rand();
        if (kind < 0.1) {
          await record(store, check(id, clock.now(), { online: false, playersOnline: null }));
        } else if (kind < 0.2) {
          await record(store, check(id, clock.now() - 40 * MINUTE, { playersOnline: players }));
        } else {
          await record(store, check(id, clock.now() - Math.floor(rand() * 20) * MINUTE, { playersOnline: players }));
          expected.push({ id, clients, players });
        }
      }
      // The documented formula, in the store's 6-decimal integer form (exact comparisons).
      const score = (s: { clients: number; players: number }) =>
        s.clients * 1_000_000 + Math.floor((1_000_000 * s.players) / (s.players + 1000));
      expected.sort((a, b) => score(b) - score(a) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      const ranking = expected.map((s) => s.id);
      await store.flush();

      for (let limit = 1; limit <= 50; limit++) {
        const seen: string[] = [];
        let cursor: string | null = null;
        for (let pages = 0; ; pages++) {
          expect(pages).toBeLessThanOrEqual(ranking.length);
          const page = await store.trends(limit, cursor);
          expect(page.data.length).toBeLessThanOrEqual(limit);
          seen.push(...page.data.map((s) => s.server_id));
          if (!page.hasNext) {
            expect(page.nextCursor).toBeNull();
            break;
          }
          expect(page.data).toHaveLength(limit);
          expect(page.nextCursor).toBe(page.data[limit - 1]?.server_id);
          cursor = page.nextCursor;
        }
        expect(seen, `limit ${limit}`).toEqual(ranking);
      }
    }, 180_000);

    it('cuts every page of a chain from the ranking of its first page, while checks land between pages', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const store = await open(target, clock);
      const ids = Array.from({ length: 8 }, () => randomUUID());
      for (const [i, id] of ids.entries()) {
        for (let c = 0; c < 8 - i; c++) store.recordLookup(id, `client-${c}`);
        await record(store, check(id, clock.now(), { playersOnline: i }));
      }
      const full = (await store.trends(50, null)).data.map((s) => s.server_id);
      expect(full).toEqual(ids);

      const chain: string[] = [];
      let page = await store.trends(1, null);
      for (let step = 0; ; step++) {
        chain.push(...page.data.map((s) => s.server_id));
        if (!page.hasNext) break;
        // Between pages the ranking moves: the last server climbs to the top, the next one
        // goes offline, a new server arrives, and the clock moves on.
        const last = ids[ids.length - 1 - (step % 3)]!;
        for (let c = 0; c < 20; c++) store.recordLookup(last, `climber-${step}-${c}`);
        const next = ids[Math.min(ids.length - 1, chain.length)]!;
        await record(store, check(next, clock.now(), { online: step % 2 === 0, playersOnline: step % 2 === 0 ? 5 : null }));
        await record(store, check(randomUUID(), clock.now(), { playersOnline: 1000 }));
        clock.advance(2000);
        page = await store.trends(1, page.nextCursor);
      }
      expect(chain).toEqual(full);
    });

    it('counts a check and a look-up in the ranking as soon as they are made, still queued', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      // A window longer than the test: nothing is written unless the read asks for it.
      const store = await open(target, clock, { writes: { windowMs: 60_000 } });
      expect((await store.trends(10, null)).data).toEqual([]);
      const [popular, quiet] = [randomUUID(), randomUUID()];
      store.recordCheck(check(quiet!, clock.now(), { playersOnline: 3 }));
      store.recordCheck(check(popular!, clock.now(), { playersOnline: 1 }));
      store.recordLookup(popular!, 'client-a');
      const page = await store.trends(10, null);
      expect(page.data.map((s) => [s.server_id, s.trend_score])).toEqual([
        [popular, 1.000999],
        [quiet, 0.002991],
      ]);
    });

    it('rejects a cursor naming a server it does not know', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const store = await open(target, clock);
      await record(store, check(randomUUID(), clock.now()));
      const error = await store.trends(10, randomUUID()).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidCursorError);
      expect(error).toMatchObject({ code: 'invalid_cursor', statusCode: 400 });
    });

    it('continues after a cursor whose server has left the ranking, from where it stood', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const store = await open(target, clock);
      const ids = Array.from({ length: 5 }, () => randomUUID());
      for (const [i, id] of ids.entries()) {
        for (let c = 0; c < 5 - i; c++) store.recordLookup(id, `client-${c}`);
        await record(store, check(id, clock.now()));
      }
      await store.flush();
      const first = await store.trends(2, null);
      expect(first.data.map((s) => s.server_id)).toEqual(ids.slice(0, 2));
      await record(store, check(ids[1]!, clock.now() + 1, { online: false, playersOnline: null }));
      const second = await store.trends(2, first.nextCursor);
      expect(second.data.map((s) => s.server_id)).toEqual(ids.slice(2, 4));
      expect((await store.trends(10, null)).data.map((s) => s.server_id)).toEqual([ids[0], ...ids.slice(2)]);
    });

    it('answers /stats: all-time counters, servers by their latest check of the last 24 hours, recent checks', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const store = await open(target, clock);
      const now = clock.now();
      const [a, b, c, gone] = Array.from({ length: 4 }, () => randomUUID());
      await record(store, check(gone!, now - 25 * HOUR, { host: 'gone.example.com', playersOnline: 500 }));
      await record(store, check(c!, now - 3 * HOUR, { host: 'c.example.com', playersOnline: 8 }));
      await record(store, check(c!, now - 2 * HOUR, { host: 'c.example.com', online: false, playersOnline: null, playersMax: null }));
      for (let i = 0; i < 10; i++) {
        await record(store, check(a!, now - (10 - i) * MINUTE, { host: 'a.example.com', playersOnline: i }));
      }
      await record(store, check(b!, now, { edition: 'bedrock', host: 'b.example.com', port: 19133, playersOnline: 5 }));
      store.count({ totalRequests: 5, apiRequests: 4, serverQueries: 3, totalChecks: 14 });
      store.count({ totalRequests: 1 });

      const stats = await store.stats();
      expect(stats).toMatchObject({
        totalRequests: 6,
        apiRequests: 4,
        serverQueries: 3,
        totalChecks: 14,
        onlineServers: 2,
        offlineServers: 1,
        activePlayers: 14, // a: 9, b: 5
        onlineRate: 66.67,
      });
      expect(stats.recentChecks).toHaveLength(10);
      expect(stats.recentChecks[0]).toEqual({
        hostname: 'b.example.com',
        port: 19133,
        edition: 'bedrock',
        online: true,
        players: 5,
        checked_at: new Date(now).toISOString(),
      });
      expect(stats.recentChecks.slice(1).map((r) => r.players)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1]);
    });

    it('reports an offline check with players null, and zeros on an empty database', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const store = await open(target, clock, { statsCacheMs: 0 });
      expect(await store.stats()).toEqual({
        totalRequests: 0,
        apiRequests: 0,
        serverQueries: 0,
        totalChecks: 0,
        onlineServers: 0,
        offlineServers: 0,
        activePlayers: 0,
        onlineRate: 0,
        recentChecks: [],
      });
      await record(store, check(randomUUID(), clock.now(), { online: false, playersOnline: null, playersMax: null }));
      expect((await store.stats()).recentChecks).toEqual([
        { hostname: 'mc.example.com', port: 25565, edition: 'java', online: false, players: null, checked_at: new Date(clock.now()).toISOString() },
      ]);
    });

    it('computes /stats at most once per 60 seconds', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const store = await open(target, clock);
      await record(store, check(randomUUID(), clock.now()));
      expect((await store.stats()).onlineServers).toBe(1);
      await record(store, check(randomUUID(), clock.now()));
      clock.advance(59_999);
      expect((await store.stats()).onlineServers).toBe(1);
      clock.advance(1);
      expect((await store.stats()).onlineServers).toBe(2);
    });

    it('writes counters within a second, in batches, and keeps them across a restart', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const store = await open(target, clock);
      for (let i = 0; i < 1000; i++) store.count({ totalRequests: 1, apiRequests: i % 2 });
      const written = async () =>
        new Map((await target.query('SELECT name, value FROM counters')).map((r) => [r.name, Number(r.value)]));
      // The flush timer writes them without being asked (real time: at most a second).
      await vi.waitFor(async () => expect((await written()).get('totalRequests')).toBe(1000), { timeout: 3000, interval: 100 });
      expect((await written()).get('apiRequests')).toBe(500);

      store.count({ totalRequests: 7, serverQueries: 2 });
      await store.close(); // flushes what is still buffered
      const reopened = await open(target, clock);
      expect(await reopened.stats()).toMatchObject({ totalRequests: 1007, apiRequests: 500, serverQueries: 2, totalChecks: 0 });
    });

    it('keeps look-ups buffered at close', async () => {
      const target = await backend.create();
      const clock = new FakeClock(T0);
      const store = await open(target, clock);
      const id = randomUUID();
      await record(store, check(id, clock.now()));
      store.recordLookup(id, 'client-a');
      await store.close();
      const reopened = await open(target, clock);
      expect((await reopened.trends(1, null)).data[0]?.trend_score).toBe(1);
    });

    it('keeps caches, buckets and retention right through a wall clock stepped back an hour, then forward a day', async () => {
      const target = await backend.create({ checkDays: 2, rollupDays: 30 });
      const clock = new FakeClock(T0);
      const store = await open(target, clock);
      const [first, second, third] = [randomUUID(), randomUUID(), randomUUID()];
      await record(store, check(first, clock.now(), { playersOnline: 4 }));
      expect((await store.stats()).onlineServers).toBe(1);

      clock.step(-HOUR);
      await record(store, check(second, clock.now(), { playersOnline: 6 }));
      // A minute later on the monotonic clock, however the wall clock moved, /stats is computed anew.
      clock.advance(60_000);
      expect((await store.stats()).onlineServers).toBe(2);
      // Each check is in the bucket of its own time.
      const history = await store.history(second, '7d');
      expect(history?.buckets.filter((b) => b.checks > 0).map((b) => b.time)).toEqual([new Date(Math.floor((T0 - HOUR) / HOUR) * HOUR).toISOString()]);

      clock.step(DAY);
      await record(store, check(third, clock.now(), { playersOnline: 8 }));
      clock.advance(60_000);
      // Now 23 hours after `first` and just over 24 after `second`: the last day holds two.
      expect((await store.stats()).onlineServers).toBe(2);
      // Retention measured from the new time keeps what is younger than two days.
      await store.prune();
      expect(await target.query('SELECT checked_at FROM checks')).toHaveLength(3);
      expect((await store.trends(10, null)).data.map((s) => s.server_id)).toEqual([third]);
    });

    it('keeps raw checks and hourly rows as long as their retention says, forgets servers past both, in a pass after start', async () => {
      const target = await backend.create({ checkDays: 2, rollupDays: 30 });
      const clock = new FakeClock(T0);
      const past = new FakeClock(T0 - 40 * DAY);
      const [forgotten, kept] = [randomUUID(), randomUUID()];
      const early = await open(target, past);
      await record(early, check(forgotten, past.now(), { playersOnline: 1000 }));
      await record(early, check(kept, past.now()));
      await record(early, check(kept, T0 - 10 * DAY, { online: false, playersOnline: null }));
      await record(early, check(kept, T0 - DAY));
      await record(early, check(kept, T0));
      await early.close();
      const rawTimes = async () => (await target.query('SELECT checked_at FROM checks ORDER BY checked_at')).map((r) => Number(r.checked_at));
      const hours = async () => (await target.query('SELECT hour FROM check_hours ORDER BY hour')).map((r) => Number(r.hour) * HOUR);

      // Opening never waits for retention: nothing is gone until a pass runs.
      const store = await open(target, clock);
      expect(await rawTimes()).toHaveLength(5);
      await store.prune();
      expect(await rawTimes()).toEqual([T0 - DAY, T0]);
      expect(await hours()).toEqual([T0 - 10 * DAY, T0 - DAY, T0]);
      expect((await target.query('SELECT id FROM servers')).map((r) => r.id)).toEqual([kept]);
      // The 30-day history still has the offline check of 10 days ago, from its hourly row.
      expect(await store.history(kept, '30d')).toMatchObject({ checks: 3, online_checks: 2 });

      clock.advance(21 * DAY);
      await store.prune();
      expect(await rawTimes()).toEqual([]);
      expect(await hours()).toEqual([T0 - DAY, T0]);
      expect((await target.query('SELECT id FROM servers')).map((r) => r.id)).toEqual([kept]);
      clock.advance(10 * DAY);
      await store.prune();
      expect(await target.query('SELECT id FROM servers')).toEqual([]);
      expect(await target.query('SELECT hour FROM check_hours')).toEqual([]);
    });
  });
}
