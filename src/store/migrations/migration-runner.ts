/**
 * Applies the schema migrations so that no interruption (a crash, a SIGKILL, a SIGTERM, a
 * power loss) can leave a database that the next start cannot open:
 *
 * - an atomic migration runs in one transaction with the row that records it (SQLite's DDL is
 *   transactional, PostgreSQL's too): it happened whole, or not at all;
 * - a resumable migration (a copy of every row into a new layout) runs as a first transaction
 *   that makes the new tables, steps that each copy a bounded slice of rows in a transaction
 *   that also records how far the copy got, and a last transaction that switches the tables
 *   over and records the migration. A start that finds the copy begun resumes it.
 *
 * Work that cannot run inside a transaction (SQLite's VACUUM) runs after the commits, on its
 * own (`runAfterCommit`): the store serves the current schema meanwhile. Whether it is left to
 * do is asked at every start, so that it is done once even if it was interrupted.
 *
 * The runner (MigrationRunner) asks for one step at a time: one transaction, or the work after
 * a commit. A step runs where the database's connection lives (MigrationSteps): on PostgreSQL
 * here, through the pool; on SQLite in the writer's thread, each step one request
 * (sqlite/migrate-ops.ts). Between steps the runner learns the progress and stops if asked.
 *
 * The applied migrations are recorded in Kysely's `kysely_migration` table, as Kysely's own
 * Migrator did, so databases written by earlier versions are read as they are. On PostgreSQL
 * each migration's transaction holds the same advisory lock as Kysely's Migrator, and the
 * service runs its migrations in a session that holds that lock from the first to the last
 * (MigrationSession, postgres/migration-session.ts): of the instances that share a database,
 * one migrates at a time, the others wait for their turn, then find what it applied.
 */
import { sql, type Kysely, type KyselyPlugin } from 'kysely';
import type { Dialect } from '../schema.js';
import { kyselyTransaction, type Transact } from '../transact.js';

type Db = Kysely<unknown>;

/** Work after a migration's commit that cannot run in a transaction. */
export interface AfterCommitWork {
  /** Whether it is left to do (asked at every start: cheap, and true until `run` has finished). */
  due(db: Db): Promise<boolean>;
  /** Does it; run again from the start if it was interrupted. */
  run(db: Db): Promise<void>;
}

export interface AtomicMigration {
  name: string;
  up(trx: Db): Promise<void>;
  after?: AfterCommitWork;
}

/** Where a resumable migration's steps got to, and the fraction of its work done. */
export interface StepResult {
  position: number;
  progress: number;
  done: boolean;
  /** Rows the step moved (the log reports it). */
  rows?: number;
}

export interface ResumableMigration {
  name: string;
  /** Makes what the steps fill (new tables), in the first transaction. */
  begin(trx: Db): Promise<void>;
  /** One bounded step from `position` (0 at first), in a transaction that records its result. */
  step(trx: Db, position: number): Promise<StepResult>;
  /** Switches to what the steps filled, in the last transaction. */
  finish(trx: Db): Promise<void>;
  /** What the step from `position` does, as the log names it (default: the position). */
  stage?(position: number): string;
  /** The fraction done at `position`, before a step from it has run (a resumed start reports it). */
  progress?(db: Db, position: number): Promise<number>;
  after?: AfterCommitWork;
}

export type ObserverMigration = AtomicMigration | ResumableMigration;

/** The migration running now and the fraction of it done (0..1). */
export interface MigrationState {
  name: string;
  progress: number;
}

/** A stop was asked for while migrating: the last transaction finished, the rest waits for the next start. */
export class MigrationStoppedError extends Error {
  constructor(name: string) {
    super(`migration ${name} stopped before it finished; the next start resumes it`);
    this.name = 'MigrationStoppedError';
  }
}

const LEDGER = 'kysely_migration';
const LEDGER_LOCK = 'kysely_migration_lock';
const PROGRESS = 'observer_migration_progress';
/** Kysely's Migrator's advisory lock id on PostgreSQL: instances of every version agree on it. */
export const POSTGRES_LOCK_ID = '3853314791062309107';

/**
 * What the runner reports as it goes (the service logs it): each statement of a migration's
 * transaction once it has run (`statement`: 1, 2, … within the transaction), and each
 * transaction once committed, with how long it took and, for a step of a copy, the rows it
 * moved. `step` names the transaction: `up` (an atomic migration), `begin`, a copy's step (its
 * stage, or the position it started from), `finish`, or `after` (the work after the commit).
 */
export type MigrationEvent =
  | { kind: 'statement'; migration: string; step: string; statement: number }
  | { kind: 'committed'; migration: string; step: string; progress: number; ms: number; rows?: number }
  /** Another instance runs the migrations: this one waits for its turn (`migration`: the first it lacks). */
  | { kind: 'waiting'; migration: string };

/** Where a run of the migrations is; each step answers the next one. */
export interface MigrationCursor {
  /** Apply the migrations up to this one (its name); all when absent. */
  until?: string;
  /** The ledger's tables were made. */
  ledger?: boolean;
  /** The work after the commits (true), or the transactions (absent). */
  after?: boolean;
  /** A resumable migration whose copy is done: its last transaction is next. */
  finish?: string;
  /** The work after the commits still to run is that of the migrations from this index on. */
  afterFrom: number;
}

/** What one step did, and where the next begins. */
export interface MigrationStepDone {
  migration: string;
  /** `up`, `begin`, the position a copy's step started from, `finish` or `after`. */
  step: string;
  /** Of the migration, once this step is done (0..1). */
  progress: number;
  /** A transaction that committed (the work after a commit is none). */
  committed: boolean;
  /** How long the step took. */
  ms: number;
  rows?: number;
  next: MigrationCursor;
  /** What the next step works on; null when nothing is left. */
  upcoming: MigrationState | null;
}

/** Runs the next step from `cursor`, reporting each statement; null when nothing is left. `signal` may end a step that can be ended midway. */
export type MigrationSteps = (cursor: MigrationCursor, onEvent?: (event: MigrationEvent) => void, signal?: AbortSignal) => Promise<MigrationStepDone | null>;

/**
 * A connection that runs the migrations while it holds the migration lock (PostgreSQL, where
 * several instances share a database): taken when there is something to apply, kept from the
 * first step to the last, let go when the run ends however it ends.
 */
export interface MigrationSession {
  /**
   * Waits for the lock without holding a statement open (another instance may migrate for
   * minutes), then resolves with the connection to migrate on; `onWait` is called once if it
   * has to wait. Rejects once `signal` aborts (the run ends with MigrationStoppedError).
   */
  acquire(signal: AbortSignal, onWait: () => void): Promise<Db>;
  /** A stop: the statement running on the connection is cancelled, and no other one starts. */
  stop(): void;
  /** Lets the lock and the connection go. */
  release(): Promise<void>;
}

export interface MigrationRunnerOptions {
  /** Called whenever the migration running or its progress changes (null: none runs). */
  onState?: (state: MigrationState | null) => void;
  /** Statements run and transactions committed. */
  onEvent?: (event: MigrationEvent) => void;
  /** Aborted: stop after the transaction in progress. */
  signal?: AbortSignal;
  /** Where the steps run (SQLite: its writer's thread); default: here, on `db`. */
  steps?: MigrationSteps;
  /** Where the work after the commits runs (SQLite: a process of its own); default: as the steps. */
  afterSteps?: MigrationSteps;
  /** With the default steps: they run on the connection that holds the migration lock (PostgreSQL). */
  session?: MigrationSession;
}

export class MigrationRunner {
  private current: MigrationState | null = null;
  private readonly steps: MigrationSteps;
  /** Plans on `db` from here (what is left, and where a copy stands), without running anything. */
  private readonly planner: MigrationStepper;

  constructor(
    private readonly db: Db,
    private readonly dialect: Dialect,
    private readonly migrations: readonly ObserverMigration[],
    private readonly options: MigrationRunnerOptions = {},
  ) {
    this.steps = options.steps ?? this.stepsOn(db);
    this.planner = new MigrationStepper(db, dialect, migrations);
  }

  private stepsOn(db: Db): MigrationSteps {
    return (cursor, onEvent) => new MigrationStepper(db, this.dialect, this.migrations, onEvent).next(cursor);
  }

  /** The migration running now, or null. */
  get state(): MigrationState | null {
    return this.current;
  }

  /** Names applied so far, in order (empty on a new database). */
  applied(): Promise<string[]> {
    return appliedMigrations(this.db);
  }

  /**
   * The migration the next run starts with and how far it got (a copy an earlier start left
   * half done), or null when every migration is applied.
   */
  resumes(): Promise<MigrationState | null> {
    return this.planner.upcoming({ ledger: true, afterFrom: 0 });
  }

  /** Applies every migration not applied yet, up to `until` (its name) if given; the work after their commits is left to runAfterCommit(). */
  run(until?: string): Promise<void> {
    return this.runFrom({ ...(until === undefined ? {} : { until }), afterFrom: 0 }, this.steps, this.options.session);
  }

  /** Whether work after the commits of applied migrations is left to do (an earlier start was stopped in it, say). */
  async afterCommitDue(): Promise<boolean> {
    return (await this.planner.upcoming({ ledger: true, after: true, afterFrom: 0 })) !== null;
  }

  /** Runs the work left after the migrations' commits (a VACUUM), each where `afterSteps` runs it. */
  runAfterCommit(): Promise<void> {
    return this.runFrom({ ledger: true, after: true, afterFrom: 0 }, this.options.afterSteps ?? this.steps);
  }

  private async runFrom(start: MigrationCursor, stepsHere: MigrationSteps, session?: MigrationSession): Promise<void> {
    const { onEvent, signal } = this.options;
    let cursor = start;
    let steps = stepsHere;
    // A stop during a step of the session's: its statement is cancelled, the step rolled back.
    const stop = () => session?.stop();
    signal?.addEventListener('abort', stop, { once: true });
    try {
      // Before the first step answers: a resumed copy reports where it stands, not 0.
      this.setState(await this.planner.upcoming(cursor));
      if (session && !this.options.steps && (await this.pending(start.until))) steps = this.stepsOn(await this.inTurn(session));
      for (;;) {
        if (signal?.aborted) throw new MigrationStoppedError(this.current?.name ?? (await this.firstPending()));
        const done = await steps(cursor, onEvent, signal);
        if (done === null) break;
        if (done.committed) {
          const { migration, step, progress, ms, rows } = done;
          onEvent?.({ kind: 'committed', migration, step, progress, ms, ...(rows === undefined ? {} : { rows }) });
        }
        cursor = done.next;
        const { upcoming } = done;
        if (upcoming === null) break;
        const progress = upcoming.name === done.migration ? Math.max(upcoming.progress, done.progress) : upcoming.progress;
        this.setState({ name: upcoming.name, progress: Math.min(1, Math.max(0, progress)) });
      }
    } catch (error) {
      if (signal?.aborted && !(error instanceof MigrationStoppedError)) throw new MigrationStoppedError(this.current?.name ?? (await this.firstPending()));
      throw error;
    } finally {
      signal?.removeEventListener('abort', stop);
      this.setState(null);
      await session?.release();
    }
  }

  /** Whether a migration up to `until` is not applied yet. */
  private async pending(until?: string): Promise<boolean> {
    const applied = await this.applied();
    const last = until === undefined ? this.migrations.length - 1 : this.migrations.findIndex((m) => m.name === until);
    return this.migrations.slice(0, last + 1).some((m) => !applied.includes(m.name));
  }

  /** The session's connection once it holds the lock; meanwhile the migration reported is the first one not applied. */
  private async inTurn(session: MigrationSession): Promise<Db> {
    const signal = this.options.signal ?? new AbortController().signal;
    return session.acquire(signal, () => {
      void this.firstPending().then((migration) => this.options.onEvent?.({ kind: 'waiting', migration }));
    });
  }

  private async firstPending(): Promise<string> {
    const applied = await this.applied().catch((): string[] => []);
    return (this.migrations.find((m) => !applied.includes(m.name)) ?? this.migrations[0])?.name ?? 'none';
  }

  private setState(state: MigrationState | null): void {
    this.current = state;
    this.options.onState?.(state);
  }
}

async function appliedMigrations(db: Db): Promise<string[]> {
  const rows = await sql<{ name: string }>`SELECT name FROM ${sql.table(LEDGER)} ORDER BY name`
    .execute(db)
    .then((result) => result.rows)
    .catch(noTable([]));
  return rows.map((row) => row.name);
}

/** An error that says a table does not exist (yet): SQLite's message, PostgreSQL's undefined_table. */
function missingTable(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === '42P01' || (typeof message === 'string' && message.startsWith('no such table'));
}

/** Turns a missing table into `empty`; any other error is rethrown. */
function noTable<T>(empty: T): (error: unknown) => T {
  return (error) => {
    if (missingTable(error)) return empty;
    throw error;
  };
}

/** The next thing to do: a migration's transaction, or the work after its commit. */
type Planned =
  | { kind: 'up'; migration: AtomicMigration }
  | { kind: 'begin' | 'finish'; migration: ResumableMigration }
  | { kind: 'step'; migration: ResumableMigration; position: number }
  | { kind: 'after'; migration: ObserverMigration & { after: AfterCommitWork }; index: number };

/**
 * Runs one step of the migrations on the connection it is given (PostgreSQL: the pool; SQLite:
 * the writer thread's own), reporting each statement of it.
 */
export class MigrationStepper {
  /** The transaction running, and its statements so far. */
  private step: { migration: string; step: string; statements: number } | null = null;
  private readonly db: Db;

  constructor(
    db: Db,
    private readonly dialect: Dialect,
    private readonly migrations: readonly ObserverMigration[],
    private readonly onEvent?: (event: MigrationEvent) => void,
    private readonly transact: Transact = kyselyTransaction,
  ) {
    this.db = onEvent ? db.withPlugin(this.statementCounter()) : db;
  }

  /** Reports each statement of a migration's transaction once it has run. */
  private statementCounter(): KyselyPlugin {
    return {
      transformQuery: ({ node }) => node,
      transformResult: async ({ result }) => {
        const step = this.step;
        if (step) this.onEvent?.({ kind: 'statement', migration: step.migration, step: step.step, statement: ++step.statements });
        return result;
      },
    };
  }

  /** Runs the step after `cursor`; null when nothing is left. */
  async next(cursor: MigrationCursor): Promise<MigrationStepDone | null> {
    if (!cursor.ledger) {
      await this.ensureLedger();
      cursor = { ...cursor, ledger: true };
    }
    const planned = await this.plan(cursor);
    if (planned === null) return null;
    const started = performance.now();
    const done = await this.run(planned, cursor);
    const ms = Math.round(performance.now() - started);
    return { ...done, ms, upcoming: await this.upcoming(done.next) };
  }

  /** What the step after `cursor` works on, and the fraction of it done; null when nothing is left. */
  async upcoming(cursor: MigrationCursor): Promise<MigrationState | null> {
    const planned = await this.plan(cursor);
    if (planned === null) return null;
    const { migration } = planned;
    if (planned.kind === 'after' || planned.kind === 'finish') return { name: migration.name, progress: 1 };
    if (planned.kind !== 'step') return { name: migration.name, progress: 0 };
    return { name: migration.name, progress: (await planned.migration.progress?.(this.db, planned.position)) ?? 0 };
  }

  /** The transactions left (cursor.after unset), or the work after the commits left to do. */
  private async plan(cursor: MigrationCursor): Promise<Planned | null> {
    const { migrations } = this;
    const applied = new Set(await appliedMigrations(this.db));
    if (cursor.after) {
      for (let index = cursor.afterFrom; index < migrations.length; index++) {
        const migration = migrations[index]!;
        if (migration.after && applied.has(migration.name) && (await migration.after.due(this.db))) return { kind: 'after', migration: { ...migration, after: migration.after }, index };
      }
      return null;
    }
    const last = cursor.until === undefined ? migrations.length - 1 : migrations.findIndex((m) => m.name === cursor.until);
    for (const migration of migrations.slice(0, last + 1)) {
      if (applied.has(migration.name)) continue;
      if (!('step' in migration)) return { kind: 'up', migration };
      if (cursor.finish === migration.name) return { kind: 'finish', migration };
      const position = await this.position(this.db, migration.name);
      return position === null ? { kind: 'begin', migration } : { kind: 'step', migration, position };
    }
    return null;
  }

  private async run(planned: Planned, cursor: MigrationCursor): Promise<Omit<MigrationStepDone, 'upcoming' | 'ms'>> {
    const { name } = planned.migration;
    const done = (step: string, progress: number, next: MigrationCursor = cursor) => ({ migration: name, step, progress, committed: true, next });
    switch (planned.kind) {
      case 'up': {
        const { migration } = planned;
        await this.transaction(name, 'up', (trx) => migration.up(trx));
        return done('up', 1);
      }
      case 'begin':
        await this.begin(planned.migration);
        return done('begin', 0);
      case 'step': {
        const { migration, position } = planned;
        const stage = migration.stage?.(position) ?? String(position);
        const result = await this.copyStep(migration, stage);
        // Another instance finished it (PostgreSQL): the next plan finds it applied.
        if (result === null) return done(stage, 1);
        const step = done(stage, result.progress, result.done ? { ...cursor, finish: name } : cursor);
        return result.rows === undefined ? step : { ...step, rows: result.rows };
      }
      case 'finish': {
        const { migration } = planned;
        await this.transaction(name, 'finish', async (trx) => {
          await migration.finish(trx);
          await sql`DROP TABLE ${sql.table(PROGRESS)}`.execute(trx);
        });
        const { finish: _finished, ...next } = cursor;
        return done('finish', 1, next);
      }
      case 'after': {
        this.step = { migration: name, step: 'after', statements: 0 };
        try {
          await planned.migration.after.run(this.db);
        } finally {
          this.step = null;
        }
        return { ...done('after', 1, { ...cursor, afterFrom: planned.index + 1 }), committed: false };
      }
    }
  }

  private async ensureLedger(): Promise<void> {
    // Made already: no lock to wait for (another instance may hold it for a long migration).
    if (this.dialect === 'postgres' && (await this.ledgerExists())) return;
    await this.transact(this.db, async (trx) => {
      if (this.dialect === 'postgres') await sql`SELECT pg_advisory_xact_lock(${sql.lit(POSTGRES_LOCK_ID)})`.execute(trx);
      // The same tables Kysely's Migrator made, so that either can read what the other wrote.
      await trx.schema
        .createTable(LEDGER)
        .ifNotExists()
        .addColumn('name', 'varchar(255)', (c) => c.notNull().primaryKey())
        .addColumn('timestamp', 'varchar(255)', (c) => c.notNull())
        .execute();
      await trx.schema
        .createTable(LEDGER_LOCK)
        .ifNotExists()
        .addColumn('id', 'varchar(255)', (c) => c.notNull().primaryKey())
        .addColumn('is_locked', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    });
  }

  private async ledgerExists(): Promise<boolean> {
    const { rows } = await sql<{ made: boolean }>`SELECT to_regclass(${LEDGER}) IS NOT NULL AND to_regclass(${LEDGER_LOCK}) IS NOT NULL AS made`.execute(this.db);
    return rows[0]?.made === true;
  }

  private async isApplied(db: Db, name: string): Promise<boolean> {
    const { rows } = await sql`SELECT 1 FROM ${sql.table(LEDGER)} WHERE name = ${name}`.execute(db);
    return rows.length > 0;
  }

  /**
   * Runs `work` in a transaction that records `name` as applied when `record` is set; on
   * PostgreSQL under the migration lock, and skipped if another instance applied it meanwhile.
   * Returns false when skipped.
   */
  private async transaction(name: string, step: string, work: (trx: Db) => Promise<void>, record = true): Promise<boolean> {
    this.step = { migration: name, step, statements: 0 };
    try {
      return await this.transactionOf(name, work, record);
    } finally {
      this.step = null;
    }
  }

  private transactionOf(name: string, work: (trx: Db) => Promise<void>, record: boolean): Promise<boolean> {
    return this.transact(this.db, async (trx) => {
      if (this.dialect === 'postgres') {
        // A migration's statements take as long as its rows need; other instances wait for it.
        await sql`SET LOCAL statement_timeout = 0`.execute(trx);
        await sql`SELECT pg_advisory_xact_lock(${sql.lit(POSTGRES_LOCK_ID)})`.execute(trx);
        if (await this.isApplied(trx, name)) return false;
      }
      await work(trx);
      if (record) await sql`INSERT INTO ${sql.table(LEDGER)} (name, timestamp) VALUES (${name}, ${new Date().toISOString()})`.execute(trx);
      return true;
    });
  }

  /** Where a resumable migration's copy got to; null before it began (its progress row, or the table of them, is missing). */
  private async position(db: Db, name: string): Promise<number | null> {
    const { rows } = await sql<{ position: number | string }>`SELECT position FROM ${sql.table(PROGRESS)} WHERE name = ${name}`
      .execute(db)
      .catch(noTable({ rows: [] }));
    return rows[0] === undefined ? null : Number(rows[0].position);
  }

  /** A resumable migration's first transaction: its new tables, and its progress row at 0. */
  private async begin(migration: ResumableMigration): Promise<void> {
    const { name } = migration;
    await this.transaction(
      name,
      'begin',
      async (trx) => {
        await sql`CREATE TABLE IF NOT EXISTS ${sql.table(PROGRESS)} (name varchar(255) PRIMARY KEY, position bigint NOT NULL)`.execute(trx);
        // Another instance began it while this one waited for the lock.
        if ((await this.position(trx, name)) !== null) return;
        await migration.begin(trx);
        await sql`INSERT INTO ${sql.table(PROGRESS)} (name, position) VALUES (${name}, 0)`.execute(trx);
      },
      false,
    );
  }

  /** One step of a resumable copy, in a transaction that records how far it got; null: another instance finished it. */
  private async copyStep(migration: ResumableMigration, stage: string): Promise<StepResult | null> {
    const { name } = migration;
    let result: StepResult | null = null;
    await this.transaction(
      name,
      stage,
      async (trx) => {
        const position = await this.position(trx, name);
        if (position === null) throw new Error(`migration ${name}: its progress row is missing`);
        result = await migration.step(trx, position);
        await sql`UPDATE ${sql.table(PROGRESS)} SET position = ${result.position} WHERE name = ${name}`.execute(trx);
      },
      false,
    );
    return result;
  }
}
