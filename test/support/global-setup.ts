import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { buildServiceIfStale } from '../../scripts/build-if-stale.mjs';

/**
 * Builds the web front (dist/web) when it is missing or older than any file it was built
 * from (the manifest lists them), or than anything under web/ (a new file), so the page
 * tests serve what the sources say now.
 */
function buildWebIfStale(): void {
  const manifest = 'dist/web/manifest.json';
  const stale = () => {
    if (!existsSync(manifest)) return true;
    const built = statSync(manifest).mtimeMs;
    const { inputs = [] } = JSON.parse(readFileSync(manifest, 'utf8')) as { inputs?: string[] };
    const web = readdirSync('web', { recursive: true, encoding: 'utf8' }).map((p) => `web/${p}`);
    return [...inputs, ...web].some((path) => !existsSync(path) || statSync(path).mtimeMs > built);
  };
  if (stale()) execFileSync('node', ['web/build.mjs'], { stdio: ['ignore', 'ignore', 'inherit'] });
}

/**
 * Makes sure the loopback servers the tests use are up (dnsmasq, PostgreSQL, Redis).
 * `npm test` has already started them; this covers a direct `npx vitest` run.
 */
export default function setup(): void {
  execFileSync('bash', ['scripts/services.sh', 'up'], { stdio: ['ignore', 'ignore', 'inherit'] });
  buildWebIfStale();
  // Worker threads (the SQLite store's, the render pool's) run the built modules.
  buildServiceIfStale();
}
