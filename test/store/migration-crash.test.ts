/**
 * Upgrades interrupted at statement boundaries of every migration, by SIGKILL and by SIGTERM,
 * from every earlier schema version, on SQLite and PostgreSQL, while status look-ups are
 * answered. The real service process (`node dist/main.js`, as `npm start` runs it) logs each
 * statement of a migration once it has run (LOG_LEVEL=debug, `migration statement done` with
 * the migration, its step and the statement's number in the step's transaction); the test
 * signals it on such a line, starts it again, and so on until a start completes the upgrade. No
 * start may fail; SIGTERM must end the process cleanly (exit 0). Then /history, /trends and
 * /stats answer exactly as on a copy upgraded without interruption, and /history knows every
 * server a look-up was answered for: after a SIGTERM all of them, after a SIGKILL all but the
 * last ones answered before it (the commit window the group commit was filling).
 *
 * A kill point is (migration, step, statement). From version v the kill points are those of
 * migration v + 1 (the first one that version lacks), as an uninterrupted upgrade of the same
 * fixture logs them; the migrations after it run on. The steps of a resumable copy (0003 on
 * SQLite: its sort, then its gathering) each run the same statements on the next slice of
 * rows, so the steps of one stage count as one step: every statement of one of its steps is a
 * kill point, with every statement of the first transaction (begin), the last (finish) and
 * the work after it (after).
 *
 * MIGRATION_CRASH_POINTS=all signals at every kill point; MIGRATION_CRASH_POINTS=k/n at every
 * n-th of each case's points in their sorted order, starting from the k-th (.ci/run runs 1/2 on
 * one Node line and 2/2 on the other: every point in each run); otherwise each case signals at
 * one of them drawn at random per signal, the seed printed (MIGRATION_CRASH_SEED draws the same
 * ones again), which keeps `npm test` short.
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
import { alive, answers, answersBeside, children, end, migrated, startService, stop, type Service } from './service-process.js';
import { buildDatabase, fixtureAddress, MIGRATION_NAMES, type HistoryShape } from './upgrade-fixture.js';
import type { LegacyDatabase } from './legacy-layout.js';

const MINUTE = 60_000;
/**
 * 120,000 checks in time order, shared out heavy-tailed: the SQLite copy of migration 0003
 * takes three steps of its default size in each of its stages. A day and an hour of them:
 * PostgreSQL's rewrite makes the partitions of each day the history spans, the same
 * statements for every day.
 */
const SHAPE: HistoryShape = { servers: 400, checksPerServer: 300, intervalMs: 5 * MINUTE, end: Math.floor(Date.now() / MINUTE) * MINUTE - MINUTE, heavyTail: true };
/** Servers whose histories are compared: the busiest, one of the middle, the quietest. */
const COMPARED = [0, 17, 399];
/**
 * After a SIGKILL, a look-up answered this long before it must be in the history: the group
 * commit writes what it holds every 50 ms (or 500 rows), and the kill follows the log line
 * it is aimed at by a little.
 */
const KEPT_AFTER_MS = 2_000;

/** Kill points per case and signal when not every one is signalled. */
const SAMPLED_POINTS = 1;
const EVERY_POINT = process.env.MIGRATION_CRASH_POINTS === 'all';
const SHARE = /^(\d+)\/(\d+)$/.exec(process.env.MIGRATION_CRASH_POINTS ?? '');
const [SHARE_FIRST, SHARE_EVERY] = SHARE ? [Number(SHARE[1]) - 1, Number(SHARE[2])] : [0, 1];
if (SHARE && !(SHARE_EVERY > 0 && SHARE_FIRST >= 0 && SHARE_FIRST < SHARE_EVERY)) throw new Error(`MIGRATION_CRASH_POINTS=${SHARE[0]}: k/n with 1 <= k <= n`);
const SEED = Number(process.env.MIGRATION_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
if (SHARE) console.log(`migration crash test: share ${SHARE[0]} of each case's kill points, in their sorted order (point ${SHARE_FIRST + 1} of every ${SHARE_EVERY})`);
else if (!EVERY_POINT) console.log(`migration crash test: kill points per case and signal: ${SAMPLED_POINTS}, seed ${SEED} (MIGRATION_CRASH_SEED=${SEED} draws them again; MIGRATION_CRASH_POINTS=all signals at every one)`);

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
        for (const suffix of ['', '-wal', '-shm', '-held']) rmSync(path + suffix, { force: true });
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

/** The step of a log line: every copy step named by its position is the step `copy`. */
function stepName(step: unknown): string {
  return /^\d+$/.test(String(step)) ? 'copy' : String(step);
}

/** The kill point a log line reports, `migration/step/statement`. */
function pointOf(entry: Record<string, unknown>): string | null {
  if (entry.msg !== 'migration statement done') return null;
  return `${String(entry.migration)}/${stepName(entry.step)}/${String(entry.statement)}`;
}

/** Waits (10 s at most) until `service` has logged the last transaction of `migration` (an atomic one's, or a copy's finish). */
async function loggedCommit(service: Service, migration: string): Promise<void> {
  const last = (e: Record<string, unknown>) => e.msg === 'migration step committed' && e.migration === migration && (e.step === 'up' || e.step === 'finish');
  for (let i = 0; i < 200 && !service.log.some(last); i++) await new Promise((resolve) => setTimeout(resolve, 50));
}

/** The kill points of `migration` an uninterrupted upgrade logged, its steps in the order they ran, and those that ran more than once. */
interface Plan {
  migration: string;
  points: Set<string>;
  steps: string[];
  repeated: Set<string>;
}

function planOf(migration: string, log: Array<Record<string, unknown>>): Plan {
  const points = new Set(log.map(pointOf).filter((p): p is string => p?.startsWith(`${migration}/`) ?? false));
  const committed = log.filter((e) => e.msg === 'migration step committed' && e.migration === migration).map((e) => stepName(e.step));
  return {
    migration,
    points,
    steps: [...new Set([...points].map((p) => p.split('/')[1]!))],
    repeated: new Set(committed.filter((step, i) => committed.indexOf(step) !== i)),
  };
}

/**
 * `count` of the plan's points, drawn with a generator seeded by `seed`; all of them with
 * MIGRATION_CRASH_POINTS=all, its share of them with k/n.
 */
function sampled(plan: Plan, seed: number, count: number): Plan {
  if (EVERY_POINT) return plan;
  if (SHARE) return { ...plan, points: new Set([...plan.points].sort().filter((_, i) => i % SHARE_EVERY === SHARE_FIRST)) };
  let state = seed >>> 0 || 1;
  const next = () => {
    // xorshift32
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
  const all = [...plan.points].sort();
  const chosen = new Set<string>();
  while (chosen.size < Math.min(count, all.length)) chosen.add(all[Math.floor(next() * all.length)]!);
  return { ...plan, points: chosen };
}

/**
 * The points not signalled yet that a start reaches once the step `committed` of the
 * migration is (null: none yet): those of later steps, and of the same step when it is one of
 * a stage that repeats.
 */
function reachable(plan: Plan, done: Set<string>, committed: string | null): string[] {
  const from = committed === null ? 0 : plan.steps.indexOf(committed) + (plan.repeated.has(committed) ? 0 : 1);
  return [...plan.points].filter((p) => !done.has(p) && plan.steps.indexOf(p.split('/')[1]!) >= from);
}

type Signal = 'SIGKILL' | 'SIGTERM';

/** What the interruptions by one signal have covered: the points signalled, and the states a start completed the upgrade from. */
interface Coverage {
  done: Set<string>;
  completedFrom: Set<string>;
}

/**
 * Addresses looked up, never one twice in the whole test: each look-up is of a server new to
 * the history. Each a loopback address of its own on port 1, where nothing listens: a port of
 * 127.0.0.1 could be one another test's Minecraft server listens on, which would put an online
 * server into /trends and /stats.
 */
let looked = 0;
const lookupAddress = (n: number) => `127.${1 + ((n >> 16) & 0xff)}.${(n >> 8) & 0xff}.${n & 0xff}:1`;

/** The look-ups of one start: each address answered and when; and when the start was signalled. */
interface Lookups {
  answered: Array<{ address: string; at: number }>;
  signal: Signal | null;
  signalledAt: number;
}

/** Uncached status look-ups of `service`, one at a time, until it ends or `until` resolves. */
function lookUp(service: Service, record: Lookups, until: Promise<unknown>): Promise<void> {
  let over = false;
  void until.then(() => (over = true));
  return (async () => {
    while (!over && alive(service)) {
      const address = lookupAddress(looked++);
      try {
        const res = await fetch(`http://127.0.0.1:${service.port}/api/v1/status/${address}`);
        await res.arrayBuffer();
        if (res.status === 200) record.answered.push({ address, at: performance.now() });
      } catch {
        // killed, or not listening yet
      }
    }
  })();
}

/**
 * What the history of `service` (the upgrade complete) says of the look-ups of the starts
 * before it: every one answered is there, but, after a SIGKILL, the last ones answered before
 * it, within the commit window the group commit was filling.
 */
async function checkLookups(service: Service, starts: Lookups[]): Promise<void> {
  for (const start of starts) {
    const missing: Array<{ address: string; at: number }> = [];
    for (const lookup of start.answered) {
      const res = await fetch(`http://127.0.0.1:${service.port}/api/v1/history/${lookup.address}`);
      await res.arrayBuffer();
      if (res.status !== 200) missing.push(lookup);
    }
    if (start.signal !== 'SIGKILL') {
      expect(missing, 'look-ups of a start that was stopped or completed').toEqual([]);
      continue;
    }
    const lost = missing.filter((lookup) => lookup.at < start.signalledAt - KEPT_AFTER_MS);
    expect(lost, `look-ups answered over ${KEPT_AFTER_MS} ms before the SIGKILL`).toEqual([]);
  }
}

/**
 * Starts the service on `database` again and again, signalling each start at the first point
 * of the migration not signalled yet, while a start can reach such a point or would complete
 * the upgrade from a state no start has completed it from; a completed upgrade is checked.
 * The state is the steps committed on the copy so far (and whether a start was stopped in the
 * work after the migration's commit). Every start is looked up meanwhile.
 */
async function interruptCopy(database: LegacyDatabase, plan: Plan, signal: Signal, coverage: Coverage, check: (service: Service) => Promise<void>): Promise<void> {
  const { done, completedFrom } = coverage;
  let committed: string | null = null;
  /** Every step committed on this copy so far, of whichever migration. */
  const steps = new Set<string>();
  const starts: Lookups[] = [];
  let state = '';
  for (let start = 0; start < 500; start++) {
    if (reachable(plan, done, committed).length === 0 && completedFrom.has(state)) return;
    let signalled: string | null = null;
    // Once the start is seen done, a line still on its way from it is not a point to signal at.
    let settled = false;
    const record: Lookups = { answered: [], signal: null, signalledAt: 0 };
    starts.push(record);
    const service = await startService(database, (entry, self) => {
      const point = pointOf(entry);
      if (settled || signalled !== null || point === null || !plan.points.has(point) || done.has(point)) return;
      signalled = point;
      done.add(point);
      Object.assign(record, { signal, signalledAt: performance.now() });
      self.child.kill(signal);
    });
    const completion = migrated(service);
    const looking = lookUp(service, record, completion.catch(() => {}));
    try {
      const completed = await completion;
      settled = true;
      await looking;
      if (completed && signalled === null) {
        completedFrom.add(state);
        await checkLookups(service, starts);
        await check(service);
        await stop(service);
        return;
      }
      const exit = await service.exited;
      // Signalled, and nothing else: a start that fails on its own is what this test is against.
      expect(signalled, service.output()).not.toBeNull();
      expect(exit, service.output()).toEqual(signal === 'SIGKILL' ? { code: null, signal: 'SIGKILL' } : { code: 0, signal: null });
      if (signal === 'SIGTERM') {
        // A stop is no error, and is said once (none when the upgrade was done by the time it came).
        expect(service.log.filter((entry) => Number(entry.level) >= 50), service.output()).toEqual([]);
        expect(service.log.filter((entry) => /stopped before it finished/.test(String(entry.msg))).length, service.output()).toBeLessThanOrEqual(1);
      }
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
 * What /status and /history say while the reference's `migration` runs: asked once, when its
 * first transaction has committed (PostgreSQL's sets the previous layout's checks aside, and
 * reads them from then on). Only the rewrite (0003) is asked: its copy takes long enough for
 * both answers to come while it runs, and from version 0 (an empty database) the service
 * listens only once its tables exist.
 */
function duringMigration(migration: string) {
  let during: Promise<[Response, Response]> | null = null;
  return {
    onLine(entry: Record<string, unknown>, service: Service) {
      if (migration !== '0003_history_layout') return;
      if (during === null && entry.msg === 'migration step committed' && entry.migration === migration && entry.step === 'begin') {
        const get = (path: string) => fetch(`http://127.0.0.1:${service.port}/api/v1${path}`);
        during = Promise.all([get('/status'), get(`/history/${fixtureAddress(0)}`)]);
      }
    },
    answers: () => during,
  };
}

/** What look-ups of new servers change: the stats of servers checked in the last 24 hours and the newest checks. */
function unmovedByLookups(answered: unknown): unknown {
  const { stats, ...rest } = answered as { stats: Record<string, unknown> };
  const { offlineServers: _o, onlineRate: _r, recentChecks: _c, totalChecks: _t, ...kept } = stats;
  return { ...rest, stats: kept };
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

describe('an upgrade interrupted at statements of a migration, look-ups answered meanwhile', () => {
  it.concurrent.each(CASES)(
    'on %s from version %i, by SIGKILL and by SIGTERM, completes, answers as one never interrupted and keeps the look-ups',
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
          // Health can answer before this process has read the log lines written ahead of it
          // (a pipe and a socket): the plan is read once the migration's last commit is in.
          await loggedCommit(unbroken, migration);
          const whole = planOf(migration, unbroken.log);
          expect(whole.points.size).toBeGreaterThan(0);
          if (migration === '0003_history_layout') {
            const [health, history] = (await during.answers())!;
            expect(await health.json()).toMatchObject({ status: 'OK', migration: { name: migration, progress: expect.any(Number) } });
            // Read from the previous layout while it is copied: what it held, marked stale.
            expect(history.status).toBe(200);
            expect(history.headers.get('x-cache')).toBe('STALE');
            const { stale, ...read } = (await history.json()) as { stale?: boolean; from?: string };
            expect(stale).toBe(true);
            const now = (await (await fetch(`http://127.0.0.1:${unbroken.port}/api/v1/history/${fixtureAddress(0)}`)).json()) as { from?: string };
            // The same answer as the current layout's, unless the range has moved on since.
            if (now.from === read.from) expect(read).toEqual(now);
          }
          const expected = await answers(unbroken, COMPARED);
          if (version > 0) expect((expected as { histories: Array<{ status: number; checks: number }> }).histories[0]).toMatchObject({ status: 200, checks: expect.any(Number) });
          const check = async (service: Service) => {
            const { got, reference: wanted } = await answersBeside(service, unbroken, COMPARED);
            expect(unmovedByLookups(got)).toEqual(unmovedByLookups(wanted));
          };
          // Both run to their end before the test does, whichever fails.
          const outcomes = await Promise.allSettled(
            (['SIGKILL', 'SIGTERM'] as const).map((signal, i) => {
              const plan = sampled(whole, SEED + 7919 * (2 * version + i) + (kind === 'postgres' ? 1 : 0), SAMPLED_POINTS);
              return upgradesInterrupted(copy, plan, signal, check).then((done) => [...plan.points].filter((p) => !done.has(p)));
            }),
          );
          for (const outcome of outcomes) {
            if (outcome.status === 'rejected') throw outcome.reason;
            expect(outcome.value).toEqual([]);
          }
          await stop(unbroken);
        } finally {
          await end(unbroken);
        }
      }),
  );
});
