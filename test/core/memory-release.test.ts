/**
 * The quiet-time release in a real Node process (src/core/memory-release.ts): after a burst, the
 * young generation V8 grew is given back once the process is quiet, on whichever Node line runs
 * the tests, never while work is in flight; and without `--expose-gc` the watcher stays out of
 * the way.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';

const MiB = 1024 * 1024;

/** Runs quiet-process.ts with `flags` and collects the young generation's sizes it prints until `done` says so. */
function watchYoung(flags: string[], done: (sizes: number[]) => boolean, mode = ''): Promise<number[]> {
  const child = spawn(process.execPath, [...flags, '--import', 'tsx', join(import.meta.dirname, 'quiet-process.ts'), mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const sizes: number[] = [];
  return new Promise((resolve, reject) => {
    let buffered = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      sizes.push(...lines.map(Number));
      if (done(sizes)) {
        child.kill();
        resolve(sizes);
      }
    });
    child.on('exit', (code, signal) => {
      if (signal === null) reject(new Error(`the process exited with ${code} after printing ${sizes.join(', ')}`));
    });
  });
}

it('gives back the young generation a burst grew once the process is quiet', async () => {
  const sizes = await watchYoung(['--expose-gc', '--max-semi-space-size=16'], (seen) => seen.length > 1 && seen.at(-1)! < 2 * MiB);
  expect(sizes[0]).toBeGreaterThan(8 * MiB);
  expect(sizes.at(-1)).toBeLessThan(2 * MiB);
}, 60_000);

it('gives it back when work comes between the two collections of a pair', async () => {
  const sizes = await watchYoung(['--expose-gc', '--max-semi-space-size=16'], (seen) => seen.length > 6 && seen.at(-1)! < 2 * MiB, 'interrupted');
  expect(sizes[0]).toBeGreaterThan(8 * MiB);
  expect(sizes.at(-1)).toBeLessThan(2 * MiB);
}, 60_000);

it('asks for nothing while work is in flight, however quiet the loop, and gives it back after', async () => {
  const sizes = await watchYoung(['--expose-gc', '--max-semi-space-size=16'], (seen) => seen.length > 1 && seen.at(-1)! < 2 * MiB, 'busy');
  // Printed once a second from the start: the first nine readings fall within the busy ten seconds.
  expect(Math.min(...sizes.slice(0, 9))).toBeGreaterThan(8 * MiB);
  expect(sizes.at(-1)).toBeLessThan(2 * MiB);
}, 60_000);

it('without --expose-gc nothing is asked for, and V8 alone keeps what the burst grew (the control)', async () => {
  const sizes = await watchYoung(['--max-semi-space-size=16'], (seen) => seen.length >= 12);
  expect(sizes[0]).toBeGreaterThan(8 * MiB);
  expect(Math.min(...sizes)).toBeGreaterThan(8 * MiB);
}, 60_000);
