/**
 * node:http, loaded with require(). Importing it as an ES module builds its whole namespace,
 * whose `WebSocket`, `CloseEvent` and `MessageEvent` getters load Node's bundled fetch and
 * WebSocket client (undici) on Node 22 and later: 10 to 16 MiB of resident memory for code
 * nothing here runs (docs/performance.md#memory). Types still come from `import type`.
 */
import { createRequire } from 'node:module';

const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');

export const { createServer, request } = http;
