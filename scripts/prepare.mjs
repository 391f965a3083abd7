// npm's `prepare` step (after `npm ci` or `npm install` in this checkout): builds the service
// into dist/ once, so that `npm start` only runs it. After `npm ci --omit=dev` the build tools
// are gone; a dist/ built before is then kept as it is.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const built = existsSync(join(root, 'dist', 'main.js')) && existsSync(join(root, 'dist', 'web', 'manifest.json'));

let buildTools = true;
try {
  const require = createRequire(join(root, 'package.json'));
  require.resolve('typescript');
  require.resolve('esbuild');
} catch {
  buildTools = false;
}

if (!buildTools) {
  if (built) {
    console.log('prepare: no build tools installed (--omit=dev); keeping the dist/ built before');
    process.exit(0);
  }
  console.error('prepare: dist/ is not built and the build tools are not installed: run `npm ci` (with dev dependencies) first');
  process.exit(1);
}
const result = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
process.exit(result.status ?? 1);
