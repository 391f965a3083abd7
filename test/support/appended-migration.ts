/**
 * A build of Observer whose store has one more migration than this checkout's: what a rolling
 * upgrade to a version with a schema change meets, without a second release. Nothing in the
 * service reaches it: it is a patched copy of the build (`dist/`), made here.
 *
 * The patch: `dist/store/migrations.js` is renamed `migrations-base.js`, and a new
 * `migrations.js` re-exports everything of it but `observerMigrations`, which returns the
 * base's list with one migration appended (a local export wins over `export *`). The appended
 * migration is one atomic migration, recorded in the ledger like any other: on PostgreSQL its
 * transaction optionally locks tables (as a schema change would), sleeps `seconds` in one
 * statement (longer than the pool's statement timeout, which migrations lift for their own
 * transactions), then makes the table `observer_test_migration`; on SQLite it only makes the
 * table. The service logs it, reports it in health's `migration` and answers 503 `migrating`
 * for it as for any migration.
 *
 * `appendMigration(dist, migration)` patches any `dist/` in place (a container image's
 * `/app/dist` too: run it on a copy of the image's dist, or write `appendedMigrationsModule()`
 * as `migrations.js` after moving the original to `migrations-base.js`).
 * `buildWithMigration(migration)` makes a patched copy of this checkout's build in a temporary
 * directory, beside links to its `node_modules` and `assets`: start it with
 * `node <root>/dist/main.js`, in `<root>`.
 */
import { copyFileSync, cpSync, existsSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface AppendedMigration {
  /** Its name in the ledger and in health's `migration` (default `9000_test_migration`). */
  name?: string;
  /** How long its one statement sleeps, on PostgreSQL. */
  seconds: number;
  /** Tables its transaction locks ACCESS EXCLUSIVE before it sleeps (PostgreSQL), as an ALTER TABLE would. */
  lockTables?: string[];
}

export const APPENDED_MIGRATION_NAME = '9000_test_migration';

/** The text of the `migrations.js` that appends `migration` to those of `migrations-base.js` beside it. */
export function appendedMigrationsModule(migration: AppendedMigration): string {
  const spec = JSON.stringify({ name: migration.name ?? APPENDED_MIGRATION_NAME, seconds: migration.seconds, lockTables: migration.lockTables ?? [] });
  return `// A test build: Observer's migrations and one more (test/support/appended-migration.ts wrote this file).
import { sql } from 'kysely';
import { observerMigrations as baseMigrations } from './migrations-base.js';
export * from './migrations-base.js';

const APPENDED = ${spec};

export function observerMigrations(dialect, options) {
  return [
    ...baseMigrations(dialect, options),
    {
      name: APPENDED.name,
      async up(db) {
        if (dialect === 'postgres') {
          for (const table of APPENDED.lockTables) await sql\`LOCK TABLE \${sql.table(table)} IN ACCESS EXCLUSIVE MODE\`.execute(db);
          await sql\`SELECT pg_sleep(\${APPENDED.seconds})\`.execute(db);
        }
        await sql\`CREATE TABLE observer_test_migration (name varchar(255) PRIMARY KEY)\`.execute(db);
      },
    },
  ];
}
`;
}

/** Patches the build in `dist` (a directory like this checkout's dist/) so that its store has `migration` appended. */
export function appendMigration(dist: string, migration: AppendedMigration): void {
  const store = join(dist, 'store');
  if (existsSync(join(store, 'migrations-base.js'))) throw new Error(`${dist} has a migration appended already`);
  renameSync(join(store, 'migrations.js'), join(store, 'migrations-base.js'));
  writeFileSync(join(store, 'migrations.js'), appendedMigrationsModule(migration));
}

/** A patched copy of this checkout's build (run `npm run build` first; the test setup does). */
export function buildWithMigration(migration: AppendedMigration): { root: string; remove: () => void } {
  const checkout = fileURLToPath(new URL('../..', import.meta.url));
  const root = mkdtempSync(join(tmpdir(), 'observer-appended-'));
  cpSync(join(checkout, 'dist'), join(root, 'dist'), { recursive: true });
  copyFileSync(join(checkout, 'package.json'), join(root, 'package.json'));
  for (const name of ['node_modules', 'assets']) symlinkSync(join(checkout, name), join(root, name));
  appendMigration(join(root, 'dist'), migration);
  return { root, remove: () => rmSync(root, { recursive: true, force: true }) };
}
