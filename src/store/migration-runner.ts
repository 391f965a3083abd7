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
 * Work that cannot run inside a transaction (SQLite's VACUUM) runs after the commit, checked
 * at every start, so that it is done once even if it was interrupted.
 *
 * The applied migrations are recorded in Kysely's `kysely_migration` table, as Kysely's own
 * Migrator did, so databases written by earlier versions are read as they are. On PostgreSQL
 * each migration's transaction holds the same advisory lock as Kysely's Migrator: instances
 * that start together apply each migration once, the others wait, then find it applied.
 */
import { sql, type Kysely, type KyselyPlugin } from 'kysely';
import type { Dialect } from './schema.js';

type Db = Kysely<unknown>;

export interface AtomicMigration {
  name: string;
  up(trx: Db): Promise<void>;
  /** Work after the commit that cannot run in a transaction; must be idempotent (it runs at every start). */
  after?: (db: Db) => Promise<void>;
}

/** Where a resumable migration's steps got to, and the fraction of its work done. */
export interface StepResult {
  position: number;
  progress: number;
  done: boolean;
}

export interface ResumableMigration {
  name: string;
  /** Makes what the steps fill (new tables), in the first transaction. */
  begin(trx: Db): Promise<void>;
  /** One bounded step from `position` (0 at first), in a transaction that records its result. */
  step(trx: Db, position: number): Promise<StepResult>;
  /** Switches to what the steps filled, in the last transaction. */
  finish(trx: Db): Promise<void>;
  after?: (db: Db) => Promise<void>;
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
const POSTGRES_LOCK_ID = '3853314791062309107';

/**
 * What the runner reports as it goes (the service logs it): each statement of a migration's
 * transaction once it has run (`statement`: 1, 2, … within the transaction), and each
 * transaction once committed. `step` names the transaction: `up` (an atomic migration),
 * `begin`, the position a step started from, `finish`, or `after` (the work after the commit).
 */
export type MigrationEvent =
  | { kind: 'statement'; migration: string; step: string; statement: number }
  | { kind: 'committed'; migration: string; step: string; progress: number };

export interface MigrationRunnerOptions {
  /** Called whenever the migration running or its progress changes (null: none runs). */
  onState?: (state: MigrationState | null) => void;
  /** Statements run and transactions committed. */
  onEvent?: (event: MigrationEvent) => void;
  /** Aborted: stop after the transaction in progress. */
  signal?: AbortSignal;
}

export class MigrationRunner {
  private current: MigrationState | null = null;
  /** The transaction running, and its statements so far. */
  private step: { migration: string; step: string; statements: number } | null = null;
  private readonly db: Db;

  constructor(
    db: Db,
    private readonly dialect: Dialect,
    private readonly migrations: readonly ObserverMigration[],
    private readonly options: MigrationRunnerOptions = {},
  ) {
    this.db = options.onEvent ? db.withPlugin(this.statementCounter()) : db;
  }

  /** Reports each statement of a migration's transaction once it has run. */
  private statementCounter(): KyselyPlugin {
    return {
      transformQuery: ({ node }) => node,
      transformResult: async ({ result }) => {
        const step = this.step;
        if (step) this.options.onEvent?.({ kind: 'statement', migration: step.migration, step: step.step, statement: ++step.statements });
        return result;
      },
    };
  }

  /** The migration running now, or null. */
  get state(): MigrationState | null {
    return this.current;
  }

  /** Names applied so far, in order (empty on a new database). */
  async applied(): Promise<string[]> {
    const rows = await sql<{ name: string }>`SELECT name FROM ${sql.table(LEDGER)} ORDER BY name`
      .execute(this.db)
      .then((result) => result.rows)
      .catch(() => []);
    return rows.map((row) => row.name);
  }

  /** Applies every migration not applied yet, up to `until` (its name) if given, then their after-commit work. */
  async run(until?: string): Promise<void> {
    await this.ensureLedger();
    const last = until === undefined ? this.migrations.length - 1 : this.migrations.findIndex((m) => m.name === until);
    try {
      for (const migration of this.migrations.slice(0, last + 1)) {
        if (await this.isApplied(this.db, migration.name)) continue;
        this.setState({ name: migration.name, progress: 0 });
        if ('step' in migration) await this.runResumable(migration);
        else {
          await this.transaction(migration.name, 'up', (trx) => migration.up(trx));
          this.committed(migration.name, 'up', 1);
        }
      }
      for (const migration of this.migrations) {
        if (!migration.after || !(await this.isApplied(this.db, migration.name))) continue;
        this.stopIfAsked(migration.name);
        this.setState({ name: migration.name, progress: 1 });
        this.step = { migration: migration.name, step: 'after', statements: 0 };
        try {
          await migration.after(this.db);
        } finally {
          this.step = null;
        }
      }
    } finally {
      this.setState(null);
    }
  }

  private committed(migration: string, step: string, progress: number): void {
    this.options.onEvent?.({ kind: 'committed', migration, step, progress });
  }

  private setState(state: MigrationState | null): void {
    this.current = state;
    this.options.onState?.(state);
  }

  private stopIfAsked(name: string): void {
    if (this.options.signal?.aborted) throw new MigrationStoppedError(name);
  }

  private async ensureLedger(): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
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
    this.stopIfAsked(name);
    this.step = { migration: name, step, statements: 0 };
    try {
      return await this.transactionOf(name, work, record);
    } finally {
      this.step = null;
    }
  }

  private transactionOf(name: string, work: (trx: Db) => Promise<void>, record: boolean): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
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

  private async position(db: Db, name: string): Promise<number | null> {
    const { rows } = await sql<{ position: number | string }>`SELECT position FROM ${sql.table(PROGRESS)} WHERE name = ${name}`
      .execute(db)
      .catch(() => ({ rows: [] }));
    return rows[0] === undefined ? null : Number(rows[0].position);
  }

  private async runResumable(migration: ResumableMigration): Promise<void> {
    const { name } = migration;
    if ((await this.position(this.db, name)) === null) {
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
      this.committed(name, 'begin', 0);
    }
    for (;;) {
      let result: StepResult | null = null;
      const from = await this.position(this.db, name);
      await this.transaction(
        name,
        String(from),
        async (trx) => {
          const position = await this.position(trx, name);
          if (position === null) throw new Error(`migration ${name}: its progress row is missing`);
          result = await migration.step(trx, position);
          await sql`UPDATE ${sql.table(PROGRESS)} SET position = ${result.position} WHERE name = ${name}`.execute(trx);
        },
        false,
      );
      // Another instance finished it (PostgreSQL): nothing left here.
      if (result === null) return;
      const { progress, done } = result as StepResult;
      this.setState({ name, progress: Math.min(1, Math.max(0, progress)) });
      this.committed(name, String(from), progress);
      if (done) break;
    }
    await this.transaction(name, 'finish', async (trx) => {
      await migration.finish(trx);
      await sql`DROP TABLE ${sql.table(PROGRESS)}`.execute(trx);
    });
    this.committed(name, 'finish', 1);
  }
}
