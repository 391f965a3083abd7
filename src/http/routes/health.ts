import type { ServerResponse } from 'node:http';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Clock } from '../../core/clock.js';
import { SERVICE_NAME, SERVICE_VERSION } from '../../core/service-info.js';
import { Type } from 'typebox';
import { errorResponses, headers, json } from '../contract.js';

export type DependencyState = 'ok' | 'degraded' | 'down';

/** The extra health fields: states of the backing services and the write buffer. */
export interface DependencyHealth {
  database?: DependencyState;
  redis?: DependencyState | 'disabled';
  write_buffer?: number;
  write_buffer_dropped?: number;
  /** The schema migration running (null: none). */
  migration?: { name: string; progress: number } | null;
}

/**
 * The health body, serialised once per millisecond at most: uptime monitors poll it hard, and it
 * only changes with the clock's millisecond and the dependency states, which are read once per
 * millisecond (a body is what the instance knew at its timestamp). Shared by the route and the
 * front (fast-status.ts).
 */
export function healthBody(clock: Clock, dependencies?: () => DependencyHealth): () => string {
  let lastMs = -1;
  let body = '';
  return () => {
    const now = clock.now();
    if (now === lastMs) return body;
    lastMs = now;
    const extra = dependencies?.() ?? {};
    body = JSON.stringify({ status: 'OK', timestamp: new Date(now).toISOString(), service: SERVICE_NAME, version: SERVICE_VERSION, ...extra });
    return body;
  };
}

/** Writes a health answer on a raw response. */
export type HealthAnswer = (res: ServerResponse) => void;

/**
 * The one writer of health answers, for the route and the front (fast-status.ts) alike:
 * `body`'s health, with the request steps' headers (`headerPairs`, request-steps.ts), kept with
 * the body they were made for.
 */
export function healthAnswer(body: () => string, headerPairs: readonly string[]): HealthAnswer {
  // Header pairs, flat: writeHead takes an array as is.
  const fixed = [...headerPairs, 'cache-control', 'no-store', 'content-type', 'application/json; charset=utf-8'];
  let lastText = '';
  let headers: string[] = [];
  return (res) => {
    const text = body();
    if (text !== lastText) {
      lastText = text;
      headers = [...fixed, 'content-length', String(Buffer.byteLength(text))];
    }
    res.writeHead(200, headers);
    res.end(text);
  };
}

/** GET /status: health for uptime monitors. Never rate-limited, never cached. */
export const healthRoutes: FastifyPluginAsyncTypebox<{ answer: HealthAnswer }> = async (app, { answer }) => {
  app.get(
    '/status',
    {
      schema: {
        operationId: 'getHealth',
        summary: 'Health check',
        description:
          'Always 200 while the process serves requests, also in maintenance mode and while the database or ' +
          'Redis is down (the extra fields `database`, `redis` and `write_buffer` tell). Not rate-limited.',
        tags: ['health'],
        security: [],
        response: {
          200: json('The instance answers.', Type.Ref('HealthResponse'), headers('Cache-Control!')),
          ...errorResponses({}, { duringMaintenance: true }),
        },
      },
    },
    (_request, reply) => answer(reply.hijack().raw),
  );
};
