/**
 * The migration runner's bookkeeping of a resumable copy, on an SQLite database of its own: a
 * resumed copy reports where it stands before its next step has run, and a failure to read
 * where it stands stops the run instead of starting the copy over.
 */
import { Kysely, SqliteDialect, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { MigrationRunner, type ResumableMigration } from '../../src/store/migrations/migration-runner.js';
import { sqliteBinding } from '../../src/store/sqlite/binding.js';

/** Copies `rows` numbers into `copied`, `per` a step, counting its begins. */
function copyMigration(rows: number, per: number, begins: { count: number }): ResumableMigration {
  return {
    name: '0001_copy',
    async begin(trx) {
      begins.count += 1;
      await sql`CREATE TABLE copied (n integer PRIMARY KEY)`.execute(trx);
    },
    async step(trx, position) {
      const last = Math.min(rows, position + per);
      for (let n = position + 1; n <= last; n++) await sql`INSERT INTO copied (n) VALUES (${n})`.execute(trx);
      return { position: last, progress: last / rows, done: last === rows, rows: last - position };
    },
    progress: async (_db, position) => position / rows,
    async finish() {},
  };
}

const opened: Array<Kysely<unknown>> = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.destroy();
});

function database(): Kysely<unknown> {
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: sqliteBinding().open(':memory:') }) });
  opened.push(db);
  return db;
}

describe('a resumable migration', () => {
  it('reports where a stopped copy stands before its next step, and goes on from there', async () => {
    const db = database();
    const begins = { count: 0 };
    const stop = new AbortController();
    const states: Array<number | undefined> = [];
    const first = new MigrationRunner(db, 'sqlite', [copyMigration(10, 2, begins)], {
      signal: stop.signal,
      onEvent: (event) => {
        if (event.kind === 'committed' && event.step !== 'begin' && event.progress >= 0.6) stop.abort();
      },
    });
    await expect(first.run()).rejects.toMatchObject({ name: 'MigrationStoppedError' });

    const second = new MigrationRunner(db, 'sqlite', [copyMigration(10, 2, begins)], { onState: (state) => states.push(state?.progress) });
    expect(await second.resumes()).toEqual({ name: '0001_copy', progress: 0.6 });
    await second.run();
    // The first state reported is where the copy stood, not 0.
    expect(states[0]).toBe(0.6);
    expect(begins.count).toBe(1);
    expect((await sql<{ n: number }>`SELECT count(*) AS n FROM copied`.execute(db)).rows[0]?.n).toBe(10);
    expect(await second.applied()).toEqual(['0001_copy']);
  });

  it('stops on a failure to read its position, instead of beginning the copy again', async () => {
    const db = database();
    const begins = { count: 0 };
    const stop = new AbortController();
    const runner = new MigrationRunner(db, 'sqlite', [copyMigration(10, 2, begins)], {
      signal: stop.signal,
      onEvent: (event) => {
        if (event.kind === 'committed' && event.step !== 'begin') stop.abort();
      },
    });
    await expect(runner.run()).rejects.toMatchObject({ name: 'MigrationStoppedError' });
    // The record of the copy's progress, unreadable: its column gone.
    await sql`ALTER TABLE observer_migration_progress RENAME COLUMN position TO moved`.execute(db);

    await expect(new MigrationRunner(db, 'sqlite', [copyMigration(10, 2, begins)]).run()).rejects.toThrow(/no such column/);
    expect(begins.count).toBe(1);
    expect((await sql<{ n: number }>`SELECT count(*) AS n FROM copied`.execute(db)).rows[0]?.n).toBe(2);
  });
});
