/**
 * Starts a worker thread on one of our own modules, named beside the module that starts it.
 * Built (dist/), the worker runs the compiled `.js`; from the TypeScript sources (tests,
 * benches run with tsx), it runs the `.ts` file through tsx's loader, which a worker does not
 * inherit from the thread that starts it.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

export function startModuleWorker(from: string, name: string, options: Omit<WorkerOptions, 'eval'> = {}): Worker {
  const fromSources = from.endsWith('.ts');
  const url = new URL(`./${name}.${fromSources ? 'ts' : 'js'}`, from);
  if (!fromSources) return new Worker(url, options);
  const href = JSON.stringify(url.href);
  return new Worker(`import('tsx/esm/api').then(({ tsImport }) => tsImport(${href}, ${href}))`, { ...options, eval: true });
}
