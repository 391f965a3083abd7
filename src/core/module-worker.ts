/**
 * Worker threads run built modules only: `dist/<path>.js`. This module lies two levels below
 * the package's root both in the sources (src/core) and in the build (dist/core), so the same
 * URL leads to the build from either. Code that runs from the TypeScript sources (the tests,
 * the benches) thus starts its workers from the build too, which must be current
 * (scripts/build-if-stale.mjs).
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

const BUILD = new URL('../../dist/', import.meta.url);

/** The URL of the built worker module `path` (relative to src/, without extension: `render/worker`). */
export function workerModule(path: string): URL {
  return new URL(`${path}.js`, BUILD);
}

export function startModuleWorker(path: string, options: WorkerOptions = {}): Worker {
  return new Worker(workerModule(path), options);
}
