import { createRequire } from 'node:module';
import type pgTypes from 'pg';
import type { Pool } from 'pg';

// pg is loaded with the first PostgreSQL store, so a SQLite instance never holds it.
const require = createRequire(import.meta.url);

const INT8_OID = 20;
const NUMERIC_OID = 1700;

/** How a pool differs from the store's own: the migration's session keeps one connection open (migration-session.ts). */
export interface PoolShape {
  max: number;
  /** 0: an idle connection is never closed. */
  idleTimeoutMillis: number;
  /** As pg_stat_activity shows it. */
  applicationName: string;
}

const STORE_POOL: PoolShape = { max: 10, idleTimeoutMillis: 30_000, applicationName: 'observer' };

/**
 * A store's pg pool: Kysely's dialect runs on it, and the history reads use it directly
 * (history-reader.ts). Connecting and every statement have deadlines, so a stuck database
 * turns into errors instead of requests that hang. BIGINT and NUMERIC come back as JS numbers:
 * our values (milliseconds, counts, scores) stay below 2^53.
 */
export function createPostgresPool(url: string, onError: (error: Error) => void, shape: PoolShape = STORE_POOL): Pool {
  const pg = require('pg') as typeof pgTypes;
  const pool = new pg.Pool({
    connectionString: url,
    max: shape.max,
    // Short: while the database is down, a write attempt fails fast and is retried later.
    connectionTimeoutMillis: 2_000,
    idleTimeoutMillis: shape.idleTimeoutMillis,
    statement_timeout: 10_000,
    idle_in_transaction_session_timeout: 30_000,
    application_name: shape.applicationName,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID || oid === NUMERIC_OID
          ? (value: string) => Number(value)
          : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // A client losing its connection (the database stopped) must not crash the process: idle
  // ones report through the pool, checked-out ones (between two statements of a
  // transaction) through their own listener; the statement in progress rejects as usual.
  pool.on('error', onError);
  pool.on('connect', (client) => client.on('error', onError));
  return pool;
}
