/**
 * Worker threads on our own modules, named beside the module that starts them. Built (dist/),
 * a worker runs the compiled `.js`. Run from the TypeScript sources (tests, benches run with
 * tsx), it runs a module of two lines that registers tsx's loader in the worker (a worker does
 * not inherit the loaders of the thread that starts it) and then loads the `.ts` file.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** The URL a worker thread loads for module `name` beside `from` (an `import.meta.url`). */
export function workerModule(from: string, name: string): string {
  if (!from.endsWith('.ts')) return new URL(`./${name}.js`, from).href;
  // tsx's ESM API as its package's exports name it for `import`.
  const manifest = createRequire(from).resolve('tsx/package.json');
  const { exports } = JSON.parse(readFileSync(manifest, 'utf8')) as { exports: Record<string, { import: { default: string } }> };
  const api = pathToFileURL(join(dirname(manifest), exports['./esm/api']!.import.default)).href;
  const source = new URL(`./${name}.ts`, from).href;
  const shim = `(await import(${JSON.stringify(api)})).register();\nexport default (await import(${JSON.stringify(source)})).default;`;
  return `data:text/javascript,${encodeURIComponent(shim)}`;
}

export function startModuleWorker(from: string, name: string, options: WorkerOptions = {}): Worker {
  return new Worker(new URL(workerModule(from, name)), options);
}
