/**
 * The work after the migrations' commits on SQLite (the drop of the old tables and the VACUUM
 * after 0003) runs in a process of its own, started for it (after-commit-process.ts): a VACUUM
 * is one call into SQLite that takes as long as the file is large, and a thread inside such a
 * call can be neither interrupted nor left behind by an exiting process (the exit waits for
 * it). A process can: a stop kills it, and SQLite rolls back what it left, as after a crash,
 * for the next start to do again. Meanwhile the store's own writer has nothing to do: group
 * commits are held (held-batches.ts), and what else writes starts once the work is done.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { workerModule } from '../../core/module-worker.js';
import type { MigrationCursor, MigrationEvent, MigrationStepDone, MigrationSteps } from '../migrations/migration-runner.js';
import type { SqliteBinding } from './binding.js';

/** What the parent sends the process: the database, and the step to run. */
export interface AfterCommitRequest {
  path: string;
  /** The binding module to `require`, as the worker threads do. */
  module: string;
  cursor: MigrationCursor;
  events: boolean;
}

/** What the process sends back: each statement's event, then the step's result or its failure. */
export type AfterCommitMessage = { event: MigrationEvent } | { done: MigrationStepDone | null } | { error: string };

/** The work after the commits on the database at `path`, one process per step; `signal` kills it (the runner reports the stop). */
export function sqliteAfterCommitSteps(path: string, binding: SqliteBinding): MigrationSteps {
  return (cursor, onEvent, signal) =>
    new Promise<MigrationStepDone | null>((resolve, reject) => {
      const child = fork(fileURLToPath(workerModule('store/sqlite/after-commit-process')), [], { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      let settled = false;
      const settle = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', stop);
        outcome();
      };
      const stop = () => {
        child.kill('SIGKILL');
        settle(() => reject(new Error('the work after the migrations was stopped')));
      };
      if (signal?.aborted) return stop();
      signal?.addEventListener('abort', stop, { once: true });
      child.on('message', (message: AfterCommitMessage) => {
        if ('event' in message) onEvent?.(message.event);
        else if ('done' in message) settle(() => resolve(message.done));
        else settle(() => reject(new Error(message.error)));
      });
      child.once('error', (error) => settle(() => reject(error)));
      child.once('exit', (code, killed) => settle(() => reject(new Error(`the process of the work after the migrations exited (${killed ?? code}) before it answered`))));
      child.send({ path, module: binding.modulePath, cursor, events: onEvent !== undefined } satisfies AfterCommitRequest);
    });
}
