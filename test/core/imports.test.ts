/**
 * What starting the service loads: not Node's bundled fetch and WebSocket client (undici),
 * which an ES import of node:http pulls in on Node 22 and later (src/core/node-http.ts).
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

it('importing the whole service leaves undici unloaded', () => {
  const compose = fileURLToPath(new URL('../../src/compose.ts', import.meta.url));
  const script = `await import(${JSON.stringify(compose)}); console.log(JSON.stringify(process.moduleLoadList.filter((m) => /undici/.test(m))));`;
  const loaded = JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script]).toString()) as string[];
  expect(loaded).toEqual([]);
});
