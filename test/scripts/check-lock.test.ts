/**
 * scripts/check-lock.mjs (`npm run check:lock`, run by .ci/run) on copies of the real
 * package.json and lock file, spoiled the ways that broke `npm ci` before.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const base = mkdtempSync(join(tmpdir(), 'observer-check-lock-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

type Lock = { packages: Record<string, Record<string, unknown>> };
let n = 0;
/** A copy of the project's package.json and lock (changed by `edit`) with the script. */
function project(edit: (lock: Lock) => void = () => {}, options: { installed?: boolean } = {}): string {
  const dir = join(base, String((n += 1)));
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  cpSync(join(root, 'package.json'), join(dir, 'package.json'));
  cpSync(join(root, 'scripts', 'check-lock.mjs'), join(dir, 'scripts', 'check-lock.mjs'));
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as Lock;
  edit(lock);
  writeFileSync(join(dir, 'package-lock.json'), JSON.stringify(lock, null, 2));
  if (options.installed) symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

async function check(dir: string, ...args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['scripts/check-lock.mjs', ...args], { cwd: dir });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, output: e.stdout + e.stderr };
  }
}

describe('check:lock', () => {
  it('accepts the committed lock file', async () => {
    const { code, output } = await check(project());
    expect(code).toBe(0);
    expect(output).toMatch(/package-lock.json is complete: \d+ packages, \d+ optional/);
  });

  it('refuses a lock that lacks a platform package of @napi-rs/canvas', async () => {
    const dir = project((lock) => delete lock.packages['node_modules/@napi-rs/canvas-linux-arm64-gnu']);
    const { code, output } = await check(dir);
    expect(code).toBe(1);
    expect(output).toContain('node_modules/@napi-rs/canvas: optional dependency @napi-rs/canvas-linux-arm64-gnu@1.0.11 is missing from the lock');
  });

  it('refuses a platform package locked at another version than its parent asks for', async () => {
    const dir = project((lock) => {
      lock.packages['node_modules/@napi-rs/canvas-win32-x64-msvc']!.version = '1.1.0';
    });
    const { code, output } = await check(dir);
    expect(code).toBe(1);
    expect(output).toContain('@napi-rs/canvas-win32-x64-msvc@1.0.11 is locked at 1.1.0');
  });

  it('refuses an entry without integrity, and a root entry out of step with package.json', async () => {
    const dir = project((lock) => {
      delete lock.packages['node_modules/pino']!.integrity;
      lock.packages['']!.engines = { node: '>=20.9.0' };
    });
    const { code, output } = await check(dir);
    expect(code).toBe(1);
    expect(output).toContain('node_modules/pino: no integrity hash');
    expect(output).toContain("root entry's engines differ from package.json");
  });

  it('--installed tells whether node_modules holds what the lock pins', async () => {
    expect((await check(project(() => {}, { installed: true }), '--installed')).code).toBe(0);
    const changed = project((lock) => {
      lock.packages['node_modules/pino']!.version = '9.0.0';
    }, { installed: true });
    const { code, output } = await check(changed, '--installed');
    expect(code).toBe(1);
    expect(output).toContain('node_modules/pino');
    expect((await check(project(), '--installed')).output).toContain('not installed');
  });
});
