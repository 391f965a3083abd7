/**
 * WATCH_CHECKS_PER_MINUTE: however many watches are due, the loop checks at most that many a
 * minute; the others wait for the next minute. Driven tick by tick on a fake clock, against a
 * real Minecraft server and a real SQLite store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { testConfig } from '../support/app.js';
import { FakeClock } from '../support/clock.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { startOwnRedis } from '../support/redis-process.js';
import { watchRow } from '../support/watch-rows.js';

const dir = mkdtempSync(join(tmpdir(), 'observer-watch-budget-'));
let server: RunningJavaServer;
beforeAll(async () => {
  server = await startJavaServer({ motd: 'budget' });
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

type Composed = Awaited<ReturnType<typeof composeApp>>;

/** Verified watches of the fixture server, all due. */
async function insertDue(o: Composed, ids: string[]): Promise<void> {
  for (const id of ids) {
    await o.store.watches.insert(
      watchRow(id, { address: `127.0.0.1:${server.port}`, host: '127.0.0.1', expires_at: null, verified_at: 1, verified_by: 'motd', next_check_at: 0 }),
    );
  }
}

const ids = ['a', 'b', 'c', 'd'];
const checkedOf = (o: Composed) => async () =>
  (await Promise.all(ids.map((id) => o.store.watches.get(id)))).filter((w) => w!.last_checked_at !== null).length;

it('checks at most WATCH_CHECKS_PER_MINUTE watches a minute', async () => {
  const clock = new FakeClock();
  const o = await composeApp(testConfig({ DATABASE_URL: `sqlite:${join(dir, 'b.db')}`, WATCH_CHECKS_PER_MINUTE: '2', STATUS_CACHE_TTL: '3600' }), { logger: false, icmp: null, clock });
  try {
    await insertDue(o, ids);
    const checked = checkedOf(o);
    await o.watchScheduler.tick();
    expect(await checked()).toBe(2);
    clock.advance(5_000);
    await o.watchScheduler.tick();
    expect(await checked()).toBe(2);
    clock.advance(60_000);
    await o.watchScheduler.tick();
    expect(await checked()).toBe(4);
  } finally {
    await o.app.close();
  }
});

it('counts the minute for every instance together through Redis', async () => {
  const redis = await startOwnRedis();
  const clock = new FakeClock();
  const env = { DATABASE_URL: `sqlite:${join(dir, 'shared.db')}`, WATCH_CHECKS_PER_MINUTE: '2', STATUS_CACHE_TTL: '3600', REDIS_URL: redis.url };
  const a = await composeApp(testConfig(env), { logger: false, icmp: null, clock });
  const b = await composeApp(testConfig(env), { logger: false, icmp: null, clock });
  try {
    await insertDue(a, ids);
    const checked = checkedOf(a);
    await a.watchScheduler.tick();
    expect(await checked()).toBe(2);
    // The other instance has a pace of its own, but the minute's budget is spent: what it
    // claimed waits for the next minute (Redis keeps real time, so the test stops here).
    await b.watchScheduler.tick();
    expect(await checked()).toBe(2);
    const waiting = (await Promise.all(ids.map((id) => a.store.watches.get(id)))).filter((w) => w!.last_checked_at === null);
    expect(waiting).toHaveLength(2);
    for (const watch of waiting) expect(watch!.next_check_at).toBeGreaterThan(clock.now() + 30_000);
  } finally {
    await a.app.close();
    await b.app.close();
    await redis.stop();
  }
});
