/**
 * The environment that makes a built service (`node dist/main.js`, this checkout's or a
 * container's) the next version with a schema change: test-migration.mjs preloaded through
 * NODE_OPTIONS appends one migration, `9000_test_migration`, whose statement sleeps `seconds`
 * on PostgreSQL. Without these variables the build is Observer as shipped.
 */
import { fileURLToPath, pathToFileURL } from 'node:url';

export const APPENDED_MIGRATION_NAME = '9000_test_migration';

/** The preloaded module's file, for a container to mount. */
export const TEST_MIGRATION_MODULE = fileURLToPath(new URL('./test-migration.mjs', import.meta.url));

/** Variables for the service's environment; `module`: where the process sees the file (a mount in a container). */
export function appendedMigrationEnv(seconds: number, module = TEST_MIGRATION_MODULE): Record<string, string> {
  return { NODE_OPTIONS: `--import ${pathToFileURL(module).href}`, OBSERVER_TEST_MIGRATION_SECONDS: String(seconds) };
}
