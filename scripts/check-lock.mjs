#!/usr/bin/env node
// `npm run check:lock`: is package-lock.json complete, so that `npm ci` accepts it on any
// platform? A lock written on a machine whose registry lacked some platform packages (as
// happened with @napi-rs/canvas 1.1) omits them, and `npm ci` then refuses it as out of sync
// everywhere. Checks, without the network:
//  - the lock is version 3 and its root entry matches package.json (dependencies,
//    devDependencies, engines);
//  - every package entry has a version and an integrity hash (`resolved` is left out here on
//    purpose: npm is configured with omit-lockfile-registry-resolved, and npm ci then fetches
//    from the configured registry; when present it must be https);
//  - every optional dependency of every package (the per-platform native packages of sharp,
//    @napi-rs/canvas, esbuild, ...) is listed, at a version its range accepts, with its
//    os/cpu so npm can skip it elsewhere.
// With --installed it checks instead that node_modules holds what the lock pins (setup.sh
// runs `npm ci` only when it does not: npm ci starts by deleting node_modules).
// With --dir DIR it checks DIR's package.json and lock instead (the contract test's tools,
// test/contract/tools, whose lock scripts/contract-tools.mjs installs).
// With --npm it also runs `npm ci --dry-run --ignore-scripts` and `npm install --dry-run
// --ignore-scripts` on a copy of package.json and the lock (never on this checkout's
// node_modules): npm's own check of the same thing, and of every engines field (EBADENGINE).
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const dirArg = process.argv.indexOf('--dir');
const root = dirArg > 0 ? resolve(process.argv[dirArg + 1]) : join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
const problems = [];

if (process.argv.includes('--installed')) {
  let hidden;
  try {
    hidden = JSON.parse(readFileSync(join(root, 'node_modules', '.package-lock.json'), 'utf8')).packages ?? {};
  } catch {
    console.error('node_modules: not installed');
    process.exit(1);
  }
  const stale = [];
  for (const [key, entry] of Object.entries(lock.packages ?? {})) {
    if (key === '' || entry.link) continue;
    const have = hidden[key];
    // Optional packages (other platforms) are legitimately absent.
    if (!have ? !entry.optional && !entry.devOptional : have.version !== entry.version) stale.push(key);
  }
  for (const key of Object.keys(hidden)) if (!lock.packages?.[key]) stale.push(key);
  if (stale.length > 0) {
    console.error(`node_modules differs from package-lock.json: ${stale.slice(0, 5).join(', ')}${stale.length > 5 ? ', ...' : ''}`);
    process.exit(1);
  }
  process.exit(0);
}

if (lock.lockfileVersion !== 3) problems.push(`lockfileVersion is ${lock.lockfileVersion}, expected 3`);
const packages = lock.packages ?? {};
const top = packages[''] ?? {};
for (const field of ['dependencies', 'devDependencies', 'optionalDependencies', 'engines']) {
  const want = JSON.stringify(pkg[field] ?? {});
  const have = JSON.stringify(top[field] ?? {});
  if (want !== have) problems.push(`root entry's ${field} differ from package.json (run npm install)`);
}

/** Where npm would find `name` when required from the package at `from` (node_modules lookup). */
function locate(from, name) {
  let base = from;
  for (;;) {
    const key = base === '' ? `node_modules/${name}` : `${base}/node_modules/${name}`;
    if (packages[key]) return key;
    if (base === '') return null;
    const i = base.lastIndexOf('/node_modules/');
    base = i === -1 ? '' : base.slice(0, i);
  }
}

/** Enough of semver for the ranges optional dependencies use: exact, ^, ~, >=, x. */
function satisfies(version, range) {
  const v = version.split(/[.+-]/).slice(0, 3).map(Number);
  return range.split('||').some((alt) => {
    const r = alt.trim();
    if (r === '' || r === '*' || r === 'latest') return true;
    const m = /^(\^|~|>=|=)?v?(\d+)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?(-[\w.]+)?$/.exec(r);
    if (!m) return true; // a range this check does not understand is left to `npm ci`
    const [, op = '=', maj, min, pat] = m;
    const want = [Number(maj), min === undefined || /[x*]/.test(min) ? null : Number(min), pat === undefined || /[x*]/.test(pat) ? null : Number(pat)];
    const cmp = (a, b) => a.reduce((acc, x, i) => acc || (b[i] === null ? 0 : Math.sign(x - b[i])), 0);
    if (op === '>=') return cmp(v, want.map((x) => x ?? 0)) >= 0;
    if (op === '^') {
      if (cmp(v, want.map((x) => x ?? 0)) < 0) return false;
      if (want[0] !== 0 || want[1] === null) return v[0] === want[0];
      if (want[1] !== 0 || want[2] === null) return v[0] === 0 && v[1] === want[1];
      return v[0] === 0 && v[1] === 0 && v[2] === want[2];
    }
    if (op === '~') return cmp(v, want.map((x) => x ?? 0)) >= 0 && v[0] === want[0] && (want[1] === null || v[1] === want[1]);
    return cmp(v, want) === 0;
  });
}

let optionalCount = 0;
for (const [key, entry] of Object.entries(packages)) {
  if (key === '' || entry.link) continue;
  if (!entry.version) problems.push(`${key}: no version`);
  if (!entry.integrity) problems.push(`${key}: no integrity hash`);
  if (entry.resolved !== undefined && !entry.resolved.startsWith('https://')) {
    problems.push(`${key}: resolved is not an https URL (${entry.resolved})`);
  }
  for (const [name, range] of Object.entries(entry.optionalDependencies ?? {})) {
    optionalCount += 1;
    const found = locate(key, name);
    if (!found) {
      problems.push(`${key}: optional dependency ${name}@${range} is missing from the lock`);
      continue;
    }
    const dep = packages[found];
    if (dep.version && !satisfies(dep.version, range)) {
      problems.push(`${key}: optional dependency ${name}@${range} is locked at ${dep.version}`);
    }
    if (!dep.optional && !dep.devOptional && (dep.os || dep.cpu) && !entry.dev) {
      // A platform package must be optional, or npm ci fails on every other platform.
      problems.push(`${found}: platform package not marked optional`);
    }
  }
}

if (process.argv.includes('--npm')) {
  const dir = mkdtempSync(join(tmpdir(), 'observer-lock-'));
  try {
    cpSync(join(root, 'package.json'), join(dir, 'package.json'));
    cpSync(join(root, 'package-lock.json'), join(dir, 'package-lock.json'));
    // `npm ci` as CI and Dockerfiles run it, then a plain `npm install` as a developer does: each
    // checks every package's engines (the project's own too) against this Node.
    for (const command of ['ci', 'install']) {
      const run = spawnSync('npm', [command, '--dry-run', '--ignore-scripts', '--no-audit', '--no-fund'], {
        cwd: dir,
        encoding: 'utf8',
        // `npm run --silent check:lock` passes loglevel=silent down, which would hide the
        // warnings looked for here.
        env: { ...process.env, npm_config_loglevel: 'warn' },
      });
      const output = `${run.stdout}\n${run.stderr}`;
      // npm follows the reason with its usage text: keep the lines that say what is wrong.
      const reason = output
        .split('\n')
        .filter((line) => /missing|invalid|in sync|EBADENGINE|ERESOLVE|ETARGET|E404|\bcode |package:|required:|current:/i.test(line))
        .join('\n    ');
      if (run.status !== 0) problems.push(`npm ${command} --dry-run refused the lock:\n    ${reason || output.trim()}`);
      else if (/EBADENGINE/.test(output)) problems.push(`npm ${command} warned EBADENGINE on Node ${process.version}:\n    ${reason}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (problems.length > 0) {
  console.error(`package-lock.json check failed (${problems.length} problem${problems.length === 1 ? '' : 's'}):`);
  for (const p of problems) console.error(`  - ${p}`);
  process.exit(1);
}
console.log(
  `package-lock.json is complete: ${Object.keys(packages).length - 1} packages, ${optionalCount} optional (platform) dependencies all listed` +
    (process.argv.includes('--npm') ? `; npm ci --dry-run and npm install --dry-run accept it on Node ${process.version} without EBADENGINE` : ''),
);
