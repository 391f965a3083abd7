import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Clock } from '../../core/clock.js';
import { SERVICE_NAME, SERVICE_VERSION } from '../../core/service-info.js';
import { Type } from 'typebox';

/** GET /status: health for uptime monitors. Never rate-limited, never cached. */
export const healthRoutes: FastifyPluginAsyncTypebox<{ clock: Clock }> = async (app, { clock }) => {
  // Uptime monitors poll this hard: the body only changes with the clock's millisecond, so it
  // is serialised once per millisecond.
  let lastMs = -1;
  let body = '';
  app.get(
    '/status',
    {
      schema: {
        summary: 'Health check',
        description: 'Always 200 while the process serves requests, also in maintenance mode. Not rate-limited.',
        tags: ['health'],
        response: { 200: Type.Ref('HealthResponse') },
      },
    },
    async (_request, reply) => {
      const now = clock.now();
      if (now !== lastMs) {
        lastMs = now;
        body = JSON.stringify({
          status: 'OK',
          timestamp: new Date(now).toISOString(),
          service: SERVICE_NAME,
          version: SERVICE_VERSION,
        });
      }
      reply.header('Cache-Control', 'no-store').type('application/json; charset=utf-8');
      return body;
    },
  );
};
