// Builds the service (dist/) when a source under src/ is newer than its build or has none:
// worker threads always run the built modules (src/core/module-worker.ts), also when the code
// that starts them runs from the sources, as in the tests and the benches.
//   node scripts/build-if-stale.mjs
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Whether some src/**\/*.ts has no dist/**\/*.js, or one older than itself. */
export function serviceBuildIsStale() {
  const sources = readdirSync(join(root, 'src'), { recursive: true, encoding: 'utf8' }).filter((p) => p.endsWith('.ts') && !p.endsWith('.d.ts'));
  return sources.some((path) => {
    const built = join(root, 'dist', path.replace(/\.ts$/, '.js'));
    return !existsSync(built) || statSync(built).mtimeMs < statSync(join(root, 'src', path)).mtimeMs;
  });
}

export function buildServiceIfStale() {
  if (!serviceBuildIsStale()) return false;
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) buildServiceIfStale();
