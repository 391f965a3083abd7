/**
 * Serving Prometheus metrics, in one of two ways (both off unless configured):
 *  - `GET /metrics` on the main port, only with `METRICS_TOKEN` set, and then only for
 *    `Authorization: Bearer <token>` (compared in constant time; 401 JSON otherwise);
 *  - a separate listener on `127.0.0.1:METRICS_PORT`, reachable from the machine only, without
 *    a token (for a local agent or sidecar).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ObserverError } from '../core/errors.js';
import { createServer } from '../core/node-http.js';
import type { Metrics } from '../metrics/index.js';

/** Equal-length digests, so the comparison takes the same time whatever the caller sent. */
function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

export function registerMetricsRoute(app: FastifyInstance, options: { metrics: Metrics; token: string }): void {
  const { metrics, token } = options;
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    const header = request.headers.authorization ?? '';
    const match = /^Bearer +(\S+) *$/i.exec(header);
    if (!match || !sameSecret(match[1]!, token)) {
      throw new ObserverError('unauthorized', 401, 'The metrics need an Authorization: Bearer token.', {
        headers: { 'WWW-Authenticate': 'Bearer realm="metrics"' },
      });
    }
    const body = await metrics.scrape();
    return reply.header('Cache-Control', 'no-store').type(metrics.contentType).send(body);
  });
}

export interface MetricsServer {
  /** Always 127.0.0.1. */
  address: string;
  /** The port it listens on (useful with METRICS_PORT=0). */
  port: number;
  close(): Promise<void>;
}

/** Serves `GET /metrics` on 127.0.0.1:port; anything else is a 404. */
export async function startMetricsServer(metrics: Metrics, port: number): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '').split('?', 1)[0];
    if ((request.method !== 'GET' && request.method !== 'HEAD') || path !== '/metrics') {
      response.writeHead(404, { 'Content-Type': 'application/json; charset=utf-8' });
      response.end(JSON.stringify({ status: 'error', error: 'not_found', message: 'Metrics are served at GET /metrics.' }));
      return;
    }
    metrics.scrape().then(
      (body) => {
        response.writeHead(200, { 'Content-Type': metrics.contentType, 'Cache-Control': 'no-store' });
        response.end(request.method === 'HEAD' ? undefined : body);
      },
      () => {
        response.writeHead(500, { 'Content-Type': 'application/json; charset=utf-8' });
        response.end(JSON.stringify({ status: 'error', error: 'internal_error', message: 'Collecting the metrics failed.' }));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  return {
    address: bound.address,
    port: bound.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
