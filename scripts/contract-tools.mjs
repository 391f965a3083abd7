#!/usr/bin/env node
// The tools the contract test (test/contract) tries the OpenAPI document with, installed apart
// from the project: Redocly CLI, Spectral, @hey-api/openapi-ts, orval and
// swagger-typescript-api, pinned by test/contract/tools/package-lock.json. They are not
// devDependencies because two of them (and their dependencies) need Node 22.18 or later, so
// `npm ci` of the project would warn (EBADENGINE) on Node 20, a line the project supports.
//
// Prints, as one JSON line, `{ "node": <a Node binary of 22.18 or later>, "bin": <the tools'
// node_modules/.bin> }`: the running Node when it is recent enough, else the Node binary of
// the npm package node-<platform>-<arch> (as .ci/run gets other Node lines). Both are kept in
// ${XDG_CACHE_HOME:-~/.cache}/observer, the tools under the hash of their lock file, so every
// Node line and every run shares one install. Progress goes to stderr.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The Node line the tools run on when the running Node is older than they accept (its newest release when first installed). */
const TOOLS_NODE_LINE = 26;
const MIN_NODE = [22, 18];

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const toolsDir = join(root, 'test', 'contract', 'tools');
const cache = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'observer');

const log = (line) => process.stderr.write(`contract tools: ${line}\n`);

function recentEnough(version) {
  const [major, minor] = version.replace(/^v/, '').split('.').map(Number);
  return major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1]);
}

/** A Node binary the tools accept: this one, or the npm package's (installed once). */
function toolsNode() {
  if (recentEnough(process.version)) return process.execPath;
  const prefix = join(cache, `node-${TOOLS_NODE_LINE}`);
  const name = `node-${process.platform}-${process.arch}`;
  const binary = join(prefix, 'node_modules', name, 'bin', 'node');
  if (!existsSync(binary)) {
    log(`installing ${name}@^${TOOLS_NODE_LINE} into ${prefix}`);
    execFileSync('npm', ['install', '--prefix', prefix, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', `${name}@^${TOOLS_NODE_LINE}`], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  }
  return binary;
}

/** `npm ci` of the tools' lock under that Node, once per lock: into a fresh folder, renamed when complete. */
function installTools(node) {
  const lock = readFileSync(join(toolsDir, 'package-lock.json'));
  const manifest = readFileSync(join(toolsDir, 'package.json'));
  const hash = createHash('sha256').update(manifest).update(lock).digest('hex').slice(0, 16);
  const target = join(cache, `contract-tools-${hash}`);
  const bin = join(target, 'node_modules', '.bin');
  if (existsSync(join(target, 'installed'))) return bin;
  const staging = `${target}.${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  copyFileSync(join(toolsDir, 'package.json'), join(staging, 'package.json'));
  copyFileSync(join(toolsDir, 'package-lock.json'), join(staging, 'package-lock.json'));
  log(`npm ci into ${target} (once per lock file; a few minutes)`);
  execFileSync('npm', ['ci', '--no-audit', '--no-fund'], {
    cwd: staging,
    // npm runs on the first `node` in PATH: the one the tools accept.
    env: { ...process.env, PATH: `${dirname(node)}:${process.env.PATH}`, SCARF_ANALYTICS: 'false' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  execFileSync('touch', [join(staging, 'installed')]);
  rmSync(target, { recursive: true, force: true });
  renameSync(staging, target);
  return bin;
}

const node = toolsNode();
process.stdout.write(`${JSON.stringify({ node, bin: installTools(node) })}\n`);
