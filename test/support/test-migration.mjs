// Preloaded into a built service (`node --import <this file> dist/main.js`, or NODE_OPTIONS):
// the service then has one migration more than its own, `9000_test_migration`, as the next
// version with a schema change would. On PostgreSQL its one statement sleeps
// OBSERVER_TEST_MIGRATION_SECONDS (default 20), longer than the pool's statement timeout,
// which a migration lifts for its own transaction; then it makes the table
// observer_test_migration (on SQLite only that). It is applied, recorded and reported in
// health like any migration. Plain JavaScript, so that a container image (no TypeScript in
// it) can load it from a mounted file; docs/storage.md says how tests use it.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

export const TEST_MIGRATION_NAME = '9000_test_migration';

const seconds = Number(process.env.OBSERVER_TEST_MIGRATION_SECONDS ?? 20);

/**
 * The build's migrations module, found above the script this thread runs (dist/main.js, or the
 * SQLite writer's dist/store/sqlite/worker.js: the module is loaded in each thread that builds
 * the list of migrations, and each needs the migration appended).
 */
function migrationsModule(script) {
  for (let dir = dirname(script); dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'store', 'migrations', 'migrations.js');
    if (existsSync(file)) return file;
  }
  return null;
}

const file = process.argv[1] === undefined ? null : migrationsModule(process.argv[1]);
if (file !== null) {
  const { appendMigration } = await import(pathToFileURL(file).href);
  appendMigration((dialect) => ({
    name: TEST_MIGRATION_NAME,
    async up(db) {
      if (dialect === 'postgres') await db.selectNoFrom((eb) => eb.fn('pg_sleep', [eb.val(seconds)]).as('slept')).execute();
      await db.schema.createTable('observer_test_migration').addColumn('name', 'varchar(255)', (c) => c.primaryKey()).execute();
    },
  }));
}
