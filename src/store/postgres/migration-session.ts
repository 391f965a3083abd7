/**
 * The session a PostgreSQL instance migrates in (migration-runner.ts, MigrationSession): a
 * connection of its own that holds the migration lock, a session-level advisory lock, from the
 * first step of a run to the last, so that of the instances sharing a database one migrates at
 * a time and the others wait for their turn.
 *
 * The wait asks for the lock with pg_try_advisory_lock and sleeps between the asks (a short
 * backoff up to a second): no statement stays open while another instance migrates for
 * minutes, so the pool's statement timeout never ends the wait, and a stop ends it at once.
 * A stop while migrating cancels the statement running (pg_cancel_backend, sent on the store's
 * pool) and lets no other one start: the step rolls back, and the next start does it again.
 * Ending the session closes its connection, which lets the lock go with it; a process killed
 * outright closes it too (PostgreSQL lets the lock go once the statement in progress ends).
 */
import { Kysely, PostgresDialect, sql, type KyselyPlugin } from 'kysely';
import type { Pool } from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { POSTGRES_LOCK_ID, type MigrationSession } from '../migrations/migration-runner.js';
import { createPostgresPool } from './pool.js';

const FIRST_WAIT_MS = 100;
const LONGEST_WAIT_MS = 1_000;

/** A statement asked for once the session was stopped, or once its connection (and the lock) was lost. */
export class MigrationSessionEndedError extends Error {
  constructor(reason: string) {
    super(`the migration's session ${reason}`);
    this.name = 'MigrationSessionEndedError';
  }
}

interface Connection {
  db: Kysely<unknown>;
  /** Its backend, once it holds the lock. */
  pid: number | null;
  /** The connection holding the lock was lost: the pool would open another, without it. */
  lost: boolean;
}

/**
 * The migration session on the database at `url`; `pool` (the store's) sends a stop's cancel,
 * `onError` hears errors while waiting (the database unreachable: the wait goes on).
 */
export function postgresMigrationSession(url: string, pool: Pool, onError: (error: unknown) => void): MigrationSession {
  let connection: Connection | null = null;
  let stopped = false;
  let cancelling: Promise<unknown> = Promise.resolve();

  const guard = (own: Connection): KyselyPlugin => ({
    transformQuery: ({ node }) => {
      if (stopped) throw new MigrationSessionEndedError('was stopped');
      if (own.lost) throw new MigrationSessionEndedError('lost its connection, and the migration lock with it');
      return node;
    },
    transformResult: async ({ result }) => result,
  });

  return {
    async acquire(signal, onWait) {
      const ownPool = createPostgresPool(url, onError, { max: 1, idleTimeoutMillis: 0, applicationName: 'observer migration' });
      const own: Connection = { db: null!, pid: null, lost: false };
      ownPool.on('connect', () => {
        if (own.pid !== null) own.lost = true;
      });
      own.db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: ownPool }) }).withPlugin(guard(own));
      connection = own;
      let waited = false;
      let failing = false;
      for (let wait = FIRST_WAIT_MS; ; wait = Math.min(2 * wait, LONGEST_WAIT_MS)) {
        signal.throwIfAborted();
        try {
          const { rows } = await sql<{ locked: boolean; pid: number }>`SELECT pg_try_advisory_lock(${sql.lit(POSTGRES_LOCK_ID)}) AS locked,
            pg_backend_pid() AS pid`.execute(own.db);
          failing = false;
          if (rows[0]?.locked) {
            own.pid = rows[0].pid;
            return own.db;
          }
          if (!waited) onWait();
          waited = true;
        } catch (error) {
          // Reported once per outage; the next ask may find the database back.
          if (!failing) onError(error);
          failing = true;
        }
        await sleep(wait, undefined, { signal });
      }
    },
    stop() {
      stopped = true;
      const pid = connection && !connection.lost ? connection.pid : null;
      if (pid !== null) cancelling = pool.query('SELECT pg_cancel_backend($1)', [pid]).catch(onError);
    },
    async release() {
      const own = connection;
      connection = null;
      // Sent before the connection closes: a cancel that arrived later could find its
      // backend's number reused by another session.
      await cancelling;
      await own?.db.destroy();
    },
  };
}
