import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Newest modification time under `dir` (files only), 0 for nothing. */
function newest(dir: string): number {
  if (!existsSync(dir)) return 0;
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) latest = Math.max(latest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return latest;
}

/**
 * Builds the web front (dist/web) when it is missing or older than its sources, so the page
 * tests serve what web/src says now.
 */
function buildWebIfStale(): void {
  const manifest = 'dist/web/manifest.json';
  const sources = Math.max(newest('web'), statSync('src/render/widget/options.ts').mtimeMs);
  if (existsSync(manifest) && statSync(manifest).mtimeMs >= sources) return;
  execFileSync('node', ['web/build.mjs'], { stdio: 'inherit' });
}

/**
 * Makes sure the loopback servers the tests use are up (dnsmasq, PostgreSQL, Redis).
 * `npm test` has already started them; this covers a direct `npx vitest` run.
 */
export default function setup(): void {
  execFileSync('bash', ['scripts/services.sh', 'up'], { stdio: 'inherit' });
  buildWebIfStale();
}
