import type { FastifyInstance } from 'fastify';
import type { RequestStep } from './request-steps.js';

/**
 * CORS open to every origin (docs/api.md: every API response allows any origin). Every answer
 * carries `Access-Control-Allow-Origin: *` and exposes the headers a browser client needs
 * (rate limits, cache state); preflight requests get a 204 allowing GET and HEAD, POST (the
 * bulk look-up, watches) and DELETE (a watch), with the request headers asked for (a watch's
 * bearer token). No cookies are ever involved.
 *
 * Hand-written rather than @fastify/cors: with a fixed `*` policy there is nothing to decide
 * per request, so the headers are one static set: a request step's (request-steps.ts), written
 * on every answer whichever entrance gives it.
 */
export const CORS_HEADERS: Readonly<Record<string, string>> = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'RateLimit, RateLimit-Policy, Retry-After, X-Cache, X-Render-Cache, ETag, Allow',
};

export const corsStep: RequestStep = { name: 'cors headers', headers: CORS_HEADERS };

/**
 * Preflight answers, on any path, never rate-limited: a browser reads a refusal (a 429 and its
 * `Retry-After`) only once its preflight succeeded, so the limit applies to the request itself.
 */
export function registerPreflight(app: FastifyInstance): void {
  app.options('*', { schema: { hide: true } }, (request, reply) => {
    const requested = request.headers['access-control-request-headers'];
    if (requested) reply.header('access-control-allow-headers', requested);
    reply
      .header('access-control-allow-methods', 'GET, HEAD, POST, DELETE, OPTIONS')
      .header('access-control-max-age', '86400')
      .header('vary', 'Access-Control-Request-Headers')
      .code(204)
      .send();
  });
}
