/**
 * A rolling start of a new version: two service processes (`node dist/main.js`) started at the
 * same moment on one PostgreSQL database that holds a history in the layout before migration
 * 0003. Both come up, each migration is applied once (one ledger row each, and every statement
 * of the upgrade run by one of the two: the other waits for the migration lock, then finds them
 * applied), both answer /history, /trends and /stats as one instance does after upgrading a
 * copy alone, and neither logs an error.
 */
import { isDeepStrictEqual } from 'node:util';
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { createTestDatabase } from '../support/postgres-databases.js';
import { answersBeside, children, end, migrated, startService, stop, type Service } from './service-process.js';
import { buildDatabase, MIGRATION_NAMES, type HistoryShape } from './upgrade-fixture.js';

const MINUTE = 60_000;
const SHAPE: HistoryShape = { servers: 40, checksPerServer: 3000, intervalMs: 5 * MINUTE, end: Math.floor(Date.now() / MINUTE) * MINUTE - MINUTE };
const COMPARED = [0, 17, 39];
/** The last version with the earlier layout: every migration from the history's rewrite on is applied by the new instances. */
const VERSION = MIGRATION_NAMES.indexOf('0003_history_layout');

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** The statements each migration ran in a service, in all of its transactions. */
function statementsRun(service: Service): Map<string, number> {
  const run = new Map<string, number>();
  for (const entry of service.log) {
    if (entry.msg !== 'migration statement done') continue;
    const migration = String(entry.migration);
    run.set(migration, (run.get(migration) ?? 0) + 1);
  }
  return run;
}

it('two instances started at once on one PostgreSQL database upgrade it once and answer as one instance', { timeout: 600_000 }, async () => {
  const [shared, alone] = [await createTestDatabase('observer_upgrade'), await createTestDatabase('observer_upgrade')];
  cleanups.push(() => shared.drop(), () => alone.drop());
  for (const database of [shared, alone]) await buildDatabase({ kind: 'postgres', url: database.url }, VERSION, SHAPE);

  const single = await startService({ kind: 'postgres', url: alone.url });
  const pair = await Promise.all([startService({ kind: 'postgres', url: shared.url }), startService({ kind: 'postgres', url: shared.url })]);
  const services = [single, ...pair];
  try {
    for (const service of services) expect(await migrated(service), service.output().slice(-3000)).toBe(true);

    const client = new pg.Client({ connectionString: shared.url });
    await client.connect();
    const { rows } = await client.query<{ name: string; rows: number }>('SELECT name, count(*)::int AS rows FROM kysely_migration GROUP BY name ORDER BY name');
    await client.end();
    expect(rows).toEqual(MIGRATION_NAMES.map((name) => ({ name, rows: 1 })));

    // The upgrade ran in full in one instance, as in the one alone; the other ran none of it.
    const whole = statementsRun(single);
    const ran = pair.map(statementsRun);
    for (const migration of MIGRATION_NAMES.slice(VERSION)) expect(whole.get(migration), migration).toBeGreaterThan(3);
    expect(ran.map((r) => (r.size === 0 ? 'none' : isDeepStrictEqual(r, whole) ? 'all' : 'part')).sort()).toEqual(['all', 'none']);

    for (const service of pair) {
      const { got, reference } = await answersBeside(service, single, COMPARED);
      expect(got).toEqual(reference);
    }
    for (const service of pair) {
      expect(service.log.filter((e) => Number(e.level) >= 50 || e.msg === 'background error')).toEqual([]);
      expect(service.stderr()).toBe('');
    }
    for (const service of services) await stop(service);
  } finally {
    for (const service of services) await end(service);
  }
});
