/**
 * Every SQLite worker thread is an isolate of its own, and a module it imports is loaded and
 * kept once more in each: the writer and the reader load what their statements need and no
 * query builder. Kysely (about 260 modules, several MiB of heap per thread) loads in the
 * writer's thread only, with its first migration step or watch transaction (dynamic imports in
 * migrate-ops.ts and watch-ops.ts), and never in the reader's.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** The modules a source file imports when it loads: static imports and re-exports, not `import type`, not `import()`. */
function staticImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const match of text.matchAll(/^(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm)) found.push(match[1]!);
  return found;
}

/** The source files and packages a worker module loads, following relative imports. */
function loadedBy(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    for (const specifier of staticImports(file)) {
      if (specifier.startsWith('.')) visit(join(dirname(file), specifier.replace(/\.js$/, '.ts')));
      else if (!specifier.startsWith('node:')) packages.add(specifier.split('/')[0]!);
    }
  };
  visit(join(SRC, entry));
  return { files, packages };
}

it('the SQLite worker threads load no Kysely when they start', () => {
  const { files, packages } = loadedBy('store/sqlite/worker.ts');
  // The walk really follows the worker's imports: its batch writer and history reader are in it.
  expect([...files].map((file) => relative(SRC, file))).toEqual(
    expect.arrayContaining(['store/sqlite/batch-writer.ts', 'store/sqlite/batch-claim.ts', 'store/sqlite/history-reader.ts']),
  );
  expect([...packages]).toContain('lru-cache');
  expect([...packages]).not.toContain('kysely');
});
