/**
 * Databases of their own for tests, on the test PostgreSQL (scripts/services.sh): made empty,
 * dropped with everything connected to them.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { POSTGRES_URL } from './services.js';

/** Runs `work` on a connection to the server's `postgres` database. */
export async function asAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** An empty database named `<prefix>_<random>`. */
export async function createTestDatabase(prefix = 'observer_test'): Promise<TestDatabase> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  await asAdmin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return { name, url: url.toString(), drop: () => asAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => {}) };
}
