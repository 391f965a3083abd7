/**
 * The schema migrations on SQLite, one step per request to the writer's thread: there the
 * migration runner's stepper (migration-runner.ts) runs the step, one transaction or the work
 * after a commit (the VACUUM after 0003), on the thread's own connection through Kysely
 * (worker-kysely.ts), each transaction the thread's runTransaction (transaction.ts). The main
 * thread's runner asks for the next step until none is left, so each step has its own
 * deadline, and between steps the main thread learns the progress and can stop. Kysely and the migrations load in the writer's thread
 * with the first step only.
 */
import type { MigrationCursor, MigrationEvent, MigrationStepDone } from '../migrations/migration-runner.js';
import type { Transact } from '../transact.js';
import type { SqliteConnection } from './binding.js';
import type { RunTransaction } from './transaction.js';

/** Longest one step may take: a step of the copy takes about a second, but the VACUUM after it rewrites the whole file. */
export const MIGRATION_STEP_DEADLINE_MS = 60 * 60_000;

export interface MigrateRequest {
  cursor: MigrationCursor;
  /** Checks a step of a resumable copy aims at (default: the migration's). */
  rowsPerStep?: number;
  /** Post each statement's event to the main thread as it happens. */
  events: boolean;
}

type Stepper = (request: MigrateRequest, onEvent: (event: MigrationEvent) => void) => Promise<MigrationStepDone | null>;

/** In the writer's thread: runs one step of the migrations on `database`, each of its transactions through `runTransaction`. */
export async function createMigrationStepper(database: SqliteConnection, runTransaction: RunTransaction): Promise<Stepper> {
  const { workerKysely } = await import('./worker-kysely.js');
  const { MigrationStepper } = await import('../migrations/migration-runner.js');
  const { observerMigrations } = await import('../migrations/migrations.js');
  const db = workerKysely<unknown>(database);
  const transact: Transact = (trxDb, work) => runTransaction(() => work(trxDb));
  return ({ cursor, rowsPerStep, events }, onEvent) => {
    const migrations = observerMigrations('sqlite', rowsPerStep === undefined ? {} : { rowsPerStep });
    return new MigrationStepper(db, 'sqlite', migrations, events ? onEvent : undefined, transact).next(cursor);
  };
}
