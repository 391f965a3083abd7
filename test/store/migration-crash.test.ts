/**
 * Upgrades interrupted at every statement boundary of every migration, by SIGKILL and by
 * SIGTERM, from every earlier schema version, on SQLite and PostgreSQL. The real service
 * process (`node dist/main.js`, as `npm start` runs it) logs each statement of a migration once
 * it has run (LOG_LEVEL=debug, `migration statement done` with the migration, its step and the
 * statement's number in the step's transaction); the test signals it on such a line, starts it
 * again, and so on until a start completes the upgrade. No start may fail; SIGTERM must end the
 * process cleanly (exit 0). Then /history, /trends and /stats answer exactly as on a copy
 * upgraded without interruption.
 *
 * A kill point is (migration, step, statement). From version v the kill points are those of
 * migration v + 1 (the first one that version lacks), as an uninterrupted upgrade of the same
 * fixture logs them; the migrations after it run on. The steps of SQLite's resumable copy
 * (0003) each run the same statements on the next slice of rows, so they count as one step:
 * every statement of one copy step is a kill point, with every statement of its first
 * transaction (begin), its last (finish) and the vacuum after it.
 *
 * SIGKILL: a killed transaction is rolled back, so a copy of the fixture is killed at one point
 * after the other, the first not killed at yet, until a start completes. SIGTERM: the
 * transaction in progress commits and the process stops before the next one, so a point behind
 * another of the same transaction is reached only from a fresh copy. Copies are taken until
 * every point has been signalled; a start that could reach no point left is made only if no
 * start has yet completed the upgrade from that copy's state (the steps committed on it), and
 * its answers are compared. The signal follows the log line, so it lands at that boundary or,
 * when the process has gone on meanwhile, a few statements later.
 *
 * Two cases run side by side, each on databases and ports of its own.
 */
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { asAdmin, createTestDatabase } from '../support/postgres-databases.js';
import { answers, answersBeside, children, end, migrated, startService, stop, type Service } from './service-process.js';
import { buildDatabase, fixtureAddress, MIGRATION_NAMES, type HistoryShape } from './upgrade-fixture.js';
import type { LegacyDatabase } from './legacy-layout.js';

const MINUTE = 60_000;
/**
 * 120,000 checks: the SQLite copy of migration 0003 takes three steps of its default size. Two
 * days of them: PostgreSQL's rewrite makes the partitions of each day the history spans, the
 * same statements for every day.
 */
const SHAPE: HistoryShape = { servers: 40, checksPerServer: 3000, intervalMs: MINUTE, end: Math.floor(Date.now() / MINUTE) * MINUTE - MINUTE };
/** Servers whose histories are compared. */
const COMPARED = [0, 17, 39];

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

type Kind = LegacyDatabase['kind'];
type Copy = LegacyDatabase & { drop: () => Promise<void> };

/** A fixture database built once at `version`; copies of it are cheap (a file copy, a template database). */
async function prepareFixture(kind: Kind, version: number): Promise<() => Promise<Copy>> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'observer-upgrade-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const template = join(dir, 'template.db');
    await buildDatabase({ kind, path: template }, version, SHAPE);
    let copies = 0;
    return async () => {
      const path = join(dir, `copy-${++copies}.db`);
      for (const suffix of ['', '-wal']) if (existsSync(template + suffix)) copyFileSync(template + suffix, path + suffix);
      const drop = async () => {
        for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
      };
      return { kind, path, drop };
    };
  }
  const template = await createTestDatabase('observer_upgrade');
  cleanups.push(() => template.drop());
  await buildDatabase({ kind, url: template.url }, version, SHAPE);
  return async () => {
    const name = `observer_upgrade_${randomBytes(6).toString('hex')}`;
    await asAdmin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${template.name}`));
    const url = new URL(template.url);
    url.pathname = `/${name}`;
    const drop = () => asAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => {});
    cleanups.push(drop);
    return { kind, url: url.toString(), drop };
  };
}

/** The step of a log line: every copy step of a resumable migration is the step `copy`. */
function stepName(step: unknown): string {
  return /^\d+$/.test(String(step)) ? 'copy' : String(step);
}

/** The kill point a log line reports, `migration/step/statement`. */
function pointOf(entry: Record<string, unknown>): string | null {
  if (entry.msg !== 'migration statement done') return null;
  return `${String(entry.migration)}/${stepName(entry.step)}/${String(entry.statement)}`;
}

/** The kill points of `migration` an uninterrupted upgrade logged, and its steps in the order they ran. */
interface Plan {
  migration: string;
  points: Set<string>;
  steps: string[];
}

function planOf(migration: string, log: Array<Record<string, unknown>>): Plan {
  const points = new Set(log.map(pointOf).filter((p): p is string => p?.startsWith(`${migration}/`) ?? false));
  return { migration, points, steps: [...new Set([...points].map((p) => p.split('/')[1]!))] };
}

/**
 * The points not signalled yet that a start reaches once the step `committed` of the
 * migration is (null: none yet): those of later steps, and of later copy steps.
 */
function reachable(plan: Plan, done: Set<string>, committed: string | null): string[] {
  const from = committed === null ? 0 : plan.steps.indexOf(committed) + (committed === 'copy' ? 0 : 1);
  return [...plan.points].filter((p) => !done.has(p) && plan.steps.indexOf(p.split('/')[1]!) >= from);
}

type Signal = 'SIGKILL' | 'SIGTERM';

/** What the interruptions by one signal have covered: the points signalled, and the states a start completed the upgrade from. */
interface Coverage {
  done: Set<string>;
  completedFrom: Set<string>;
}

/**
 * Starts the service on `database` again and again, signalling each start at the first point
 * of the migration not signalled yet, while a start can reach such a point or would complete
 * the upgrade from a state no start has completed it from; a completed upgrade is checked.
 * The state is the steps committed on the copy so far (and whether a start was stopped in the
 * work after the migration's commit).
 */
async function interruptCopy(database: LegacyDatabase, plan: Plan, signal: Signal, coverage: Coverage, check: (service: Service) => Promise<void>): Promise<void> {
  const { done, completedFrom } = coverage;
  let committed: string | null = null;
  /** Every step committed on this copy so far, of whichever migration. */
  const steps = new Set<string>();
  let state = '';
  for (let start = 0; start < 500; start++) {
    if (reachable(plan, done, committed).length === 0 && completedFrom.has(state)) return;
    let signalled: string | null = null;
    // Once the start is seen done, a line still on its way from it is not a point to signal at.
    let settled = false;
    const service = await startService(database, (entry, self) => {
      const point = pointOf(entry);
      if (settled || signalled !== null || point === null || !plan.points.has(point) || done.has(point)) return;
      signalled = point;
      done.add(point);
      self.child.kill(signal);
    });
    try {
      const completed = await migrated(service);
      settled = true;
      if (completed && signalled === null) {
        completedFrom.add(state);
        await check(service);
        await stop(service);
        return;
      }
      const exit = await service.exited;
      // Signalled, and nothing else: a start that fails on its own is what this test is against.
      expect(signalled, service.output()).not.toBeNull();
      expect(exit, service.output()).toEqual(signal === 'SIGKILL' ? { code: null, signal: 'SIGKILL' } : { code: 0, signal: null });
    } finally {
      await end(service);
    }
    for (const entry of service.log) {
      if (entry.msg !== 'migration step committed') continue;
      if (entry.migration === plan.migration) committed = stepName(entry.step);
      steps.add(`${String(entry.migration)}/${stepName(entry.step)}`);
    }
    state = `${[...steps].join(' ')}${String(signalled).split('/')[1] === 'after' ? ' +after' : ''}`;
  }
  throw new Error('the upgrade never completed');
}

/** Copies of the fixture, each prepared while the one before is in use. */
function copyPool(copy: () => Promise<Copy>) {
  let next = copy();
  const drops: Array<Promise<void>> = [];
  return {
    async take(): Promise<Copy> {
      const taken = await next;
      next = copy();
      return taken;
    },
    drop: (database: Copy) => void drops.push(database.drop()),
    async close(): Promise<void> {
      drops.push((await next).drop());
      await Promise.all(drops);
    },
  };
}

/** Copies of the fixture upgraded, interrupted by `signal`, until every point of the plan is signalled and a start completed the upgrade. */
async function upgradesInterrupted(copy: () => Promise<Copy>, plan: Plan, signal: Signal, check: (service: Service) => Promise<void>): Promise<Set<string>> {
  const coverage: Coverage = { done: new Set(), completedFrom: new Set() };
  const copies = copyPool(copy);
  try {
    // A copy can end without a new point: the line of a migration's last statement may come in
    // after health has said the migration is done, too late to signal. Three in a row end it.
    for (let idle = 0; idle < 3 && (coverage.completedFrom.size === 0 || reachable(plan, coverage.done, null).length > 0); ) {
      const progress = coverage.done.size + coverage.completedFrom.size;
      const database = await copies.take();
      await interruptCopy(database, plan, signal, coverage, check);
      copies.drop(database);
      idle = coverage.done.size + coverage.completedFrom.size === progress ? idle + 1 : 0;
    }
  } finally {
    await copies.close();
  }
  return coverage.done;
}

/**
 * What /status and /history say while the reference's `migration` runs: asked once, on its
 * first statement. Only the rewrite (0003) is asked: it takes long enough for both answers to
 * come while it runs, and from version 0 (an empty database) the service listens only once its
 * tables exist.
 */
function duringMigration(migration: string) {
  let during: Promise<[Response, Response]> | null = null;
  return {
    onLine(entry: Record<string, unknown>, service: Service) {
      if (migration !== '0003_history_layout') return;
      if (during === null && entry.msg === 'migration statement done' && entry.migration === migration) {
        const get = (path: string) => fetch(`http://127.0.0.1:${service.port}/api/v1${path}`);
        during = Promise.all([get('/status'), get(`/history/${fixtureAddress(0)}`)]);
      }
    },
    answers: () => during,
  };
}

/**
 * Two cases at a time (each a SIGKILL and a SIGTERM series beside its reference), in the
 * order asked: the two cores stay busy without starving the starts of one another.
 */
const slots = { free: 2, waiting: [] as Array<() => void> };
async function inTurn(work: () => Promise<void>): Promise<void> {
  if (slots.free > 0) slots.free--;
  else await new Promise<void>((resolve) => slots.waiting.push(resolve));
  try {
    await work();
  } finally {
    const next = slots.waiting.shift();
    if (next) next();
    else slots.free++;
  }
}

/**
 * Every (database, version), the longest first: the history's rewrite (the most statements),
 * and PostgreSQL before SQLite (more statements in each migration, and a fresh database for
 * each SIGTERM).
 */
const CASES = MIGRATION_NAMES.flatMap((_, version) => [['SQLite', version, 'sqlite'] as const, ['PostgreSQL', version, 'postgres'] as const]).sort(
  ([, v1, k1], [, v2, k2]) =>
    Number(MIGRATION_NAMES[v2] === '0003_history_layout') - Number(MIGRATION_NAMES[v1] === '0003_history_layout') ||
    Number(k2 === 'postgres') - Number(k1 === 'postgres') ||
    v1 - v2,
);

describe('an upgrade interrupted at every statement of a migration', () => {
  it.concurrent.each(CASES)(
    'on %s from version %i, by SIGKILL and by SIGTERM, completes and answers as one never interrupted',
    { timeout: 1_800_000 },
    (_name, version, kind) =>
      inTurn(async () => {
        const migration = MIGRATION_NAMES[version]!;
        const copy = await prepareFixture(kind, version);
        const reference = await copy();
        const during = duringMigration(migration);
        const unbroken = await startService(reference, during.onLine);
        try {
          expect(await migrated(unbroken)).toBe(true);
          const plan = planOf(migration, unbroken.log);
          expect(plan.points.size).toBeGreaterThan(0);
          if (migration === '0003_history_layout') {
            const [health, history] = (await during.answers())!;
            expect(await health.json()).toMatchObject({ status: 'OK', migration: { name: migration, progress: expect.any(Number) } });
            expect(history.status).toBe(503);
            expect(history.headers.get('retry-after')).toMatch(/^\d+$/);
            expect(await history.json()).toMatchObject({ status: 'error', error: 'migrating' });
          }
          const expected = await answers(unbroken, COMPARED);
          if (version > 0) expect((expected as { histories: Array<{ status: number; checks: number }> }).histories[0]).toMatchObject({ status: 200, checks: expect.any(Number) });
          const check = async (service: Service) => {
            const { got, reference: wanted } = await answersBeside(service, unbroken, COMPARED);
            expect(got).toEqual(wanted);
          };
          // Both run to their end before the test does, whichever fails.
          const outcomes = await Promise.allSettled((['SIGKILL', 'SIGTERM'] as const).map((signal) => upgradesInterrupted(copy, plan, signal, check)));
          for (const outcome of outcomes) {
            if (outcome.status === 'rejected') throw outcome.reason;
            expect([...plan.points].filter((p) => !outcome.value.has(p))).toEqual([]);
          }
          await stop(unbroken);
        } finally {
          await end(unbroken);
        }
      }),
  );
});
