/**
 * A process of its own for one step of the work after the migrations' commits on SQLite
 * (after-commit.ts): it opens the database, runs the step with the migrations' own stepper,
 * reports each statement and its result to its parent, and exits. Should the parent die, it
 * kills itself rather than hold the file's write lock for a work nobody waits for: a thread
 * watches, since the main thread is inside SQLite for as long as a VACUUM takes.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { Kysely, SqliteDialect } from 'kysely';
import { MigrationStepper } from '../migrations/migration-runner.js';
import { observerMigrations } from '../migrations/migrations.js';
import type { AfterCommitMessage, AfterCommitRequest } from './after-commit.js';
import type { SqliteConnection } from './binding.js';
import { configureConnection } from './connection.js';

/** How often the watching thread looks for the parent. */
const PARENT_CHECK_MS = 200;

const send = (message: AfterCommitMessage) => new Promise<void>((resolve) => process.send!(message, () => resolve()));

// The thread's timer keeps the thread alive (an unref'd one would let it end at once); the
// thread itself does not keep the process alive.
new Worker(
  `const { workerData } = require('node:worker_threads');
  setInterval(() => { if (process.ppid !== workerData) process.kill(process.pid, 'SIGKILL'); }, ${PARENT_CHECK_MS});`,
  { eval: true, workerData: process.ppid },
).unref();

process.once('message', async ({ path, module, cursor, events }: AfterCommitRequest) => {
  try {
    const Database = createRequire(import.meta.url)(module) as new (path: string) => SqliteConnection;
    const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: configureConnection(new Database(path), 'writer') }) });
    const stepper = new MigrationStepper(db, 'sqlite', observerMigrations('sqlite'), events ? (event) => void send({ event }) : undefined);
    const done = await stepper.next(cursor);
    await db.destroy();
    await send({ done });
  } catch (error) {
    await send({ error: error instanceof Error ? error.message : String(error) });
  }
  process.exit(0);
});
