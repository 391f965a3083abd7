/**
 * A new release with a schema change, for a rolling upgrade of the compose stack
 * (test/support/compose-stack.ts): the instances' image with one more migration, which
 * test/support/test-migration.mjs appends when preloaded (appendedMigrationEnv, mounted into
 * the containers). `releaseFile` writes the compose settings that give an instance that
 * release; `up -d --no-deps` with them replaces one instance at a time, as an operator's
 * upgrade does with a new image.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { appendedMigrationEnv, TEST_MIGRATION_MODULE } from './appended-migration.js';
import type { ComposeStack } from './compose-stack.js';

/** Where the instances' containers see test-migration.mjs. */
const MOUNTED = '/opt/observer-test/test-migration.mjs';

/** Writes, in `dir`, the settings of the release whose migration sleeps `seconds`; their file. */
export function releaseFile(dir: string, seconds: number): string {
  const release = {
    environment: appendedMigrationEnv(seconds, MOUNTED),
    volumes: [`${TEST_MIGRATION_MODULE}:${MOUNTED}:ro`],
  };
  const file = join(dir, 'compose.release.yaml');
  writeFileSync(file, stringify({ services: { 'observer-1': release, 'observer-2': release } }));
  return file;
}

/**
 * A session in PostgreSQL's container that holds `table` in SHARE mode (others read it, no one
 * writes it) until released: a migration that records itself in that table waits there, its
 * transaction open, for as long as the test looks at the instances. Resolves once it holds it.
 */
export async function holdTable(stack: ComposeStack, table: string): Promise<{ release(): Promise<void> }> {
  const session = spawn('bash', ['scripts/container.sh', 'podman', 'exec', '--interactive', stack.container('postgres'),
    'psql', '--username', 'observer', '--dbname', 'observer', '--quiet', '--set', 'ON_ERROR_STOP=1'], { stdio: ['pipe', 'ignore', 'pipe'] });
  let errors = '';
  session.stderr!.on('data', (d: Buffer) => (errors += d.toString()));
  const ended = new Promise<number | null>((resolve) => session.once('close', resolve));
  session.stdin!.write(`BEGIN;\nLOCK TABLE ${table} IN SHARE MODE;\n`);
  const held = `SELECT count(*) FROM pg_locks JOIN pg_class ON pg_class.oid = relation WHERE relname = '${table}' AND mode = 'ShareLock' AND granted`;
  for (let i = 0; (await stack.psql(held)) !== '1'; i += 1) {
    if (session.exitCode !== null || i > 100) throw new Error(`could not lock ${table}: ${errors}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    async release() {
      session.stdin!.end('COMMIT;\n');
      const code = await ended;
      if (code !== 0) throw new Error(`the session holding ${table} ended ${code}: ${errors}`);
    },
  };
}
