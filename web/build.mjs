// Bundles the web front (web/src) into dist/web: content-hashed, minified files under
// assets/ with gzip twins, and manifest.json, which the service reads at start-up
// (src/http/routes/pages.ts). Prints the sizes. Usage: node web/build.mjs
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const out = join(root, 'dist', 'web');
const assets = join(out, 'assets');

/** The budget for the app's JavaScript, gzipped. */
const JS_BUDGET_GZIP = 50 * 1024;
/**
 * The two Node built-ins the service's address parser (src/resolve/address.ts) uses, as
 * browser modules: the page checks an address with the very code the API runs. Any other
 * `node:` import fails the build (esbuild targets the browser).
 */
const NODE_SHIMS = { 'node:net': join(here, 'src', 'shims', 'net.ts'), 'node:url': join(here, 'src', 'shims', 'url.ts') };
const nodeShims = {
  name: 'node-shims',
  setup(b) {
    b.onResolve({ filter: /^node:(net|url)$/ }, (args) => ({ path: NODE_SHIMS[args.path] }));
  },
};

/** Fonts the stylesheet uses on every page (under the API: the widget's font route). */
const PRELOAD = ['widget/fonts/inter-latin-400-normal.woff2', 'widget/fonts/inter-latin-700-normal.woff2'];

rmSync(out, { recursive: true, force: true });
mkdirSync(assets, { recursive: true });

const result = await build({
  entryPoints: { app: join(here, 'src', 'main.ts'), style: join(here, 'src', 'style.css') },
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome110', 'firefox115', 'safari16'],
  outdir: assets,
  entryNames: '[name]-[hash]',
  // Font URLs in the stylesheet point at the service's font route; they are not bundled.
  external: ['*.woff2'],
  plugins: [nodeShims],
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});

const files = [];
let js = '';
let css = '';
const sizes = [];
for (const [path, info] of Object.entries(result.metafile.outputs)) {
  const file = basename(path);
  const body = readFileSync(path);
  const gzip = gzipSync(body, { level: 9 });
  writeFileSync(`${path}.gz`, gzip);
  files.push(file);
  if (info.entryPoint?.endsWith('main.ts')) js = file;
  if (info.entryPoint?.endsWith('style.css')) css = file;
  sizes.push({ file, bytes: body.length, gzip: gzip.length });
}
if (!js || !css) throw new Error('web build: entry outputs not found');

// The source files of this build (paths from the repository root), so that the tests can tell a stale build.
const inputs = Object.keys(result.metafile.inputs).map((p) => relative(root, resolve(p)));
writeFileSync(join(out, 'manifest.json'), `${JSON.stringify({ js, css, files, preload: PRELOAD, inputs }, null, 2)}\n`);

for (const s of sizes) console.log(`web: ${s.file} ${s.bytes} B (${s.gzip} B gzip)`);
const jsGzip = sizes.find((s) => s.file === js).gzip;
if (jsGzip > JS_BUDGET_GZIP) {
  console.error(`web: the app's JavaScript is ${jsGzip} B gzipped, over the ${JS_BUDGET_GZIP} B budget`);
  process.exitCode = 1;
}
