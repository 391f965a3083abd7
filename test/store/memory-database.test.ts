/**
 * `DATABASE_URL=sqlite::memory:`: the whole store in one connection's memory. Reads must go
 * to the connection that holds the tables (a second one would open an empty database).
 */
import { expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { sampleCheck } from './sample-check.js';

it('keeps checks, trends, stats and history in an in-memory SQLite database', async () => {
  const store = await openStore({ database: { kind: 'sqlite', path: ':memory:' }, checkRetentionDays: 2 });
  try {
    for (let i = 0; i < 3; i++) store.recordCheck(sampleCheck(i));
    store.recordLookup('s1', 'client-a');
    await store.flush();
    expect(await store.knowsServer('s1')).toBe(true);
    expect(await store.knowsServer('s9')).toBe(false);
    const page = await store.trends(10, null);
    expect(page.data.map((item) => item.server_id)).toContain('s1');
    expect(page.data[0]!.server_id).toBe('s1');
    expect((await store.stats()).onlineServers).toBe(3);
    const history = await store.history('s2', '24h');
    expect(history).toMatchObject({ server_id: 's2', checks: 1, online_checks: 1, uptime_percentage: 100 });
    expect(await store.history('s9', '24h')).toBeNull();
  } finally {
    await store.close();
  }
});
