import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Clock } from '../../core/clock.js';
import { SERVICE_NAME, SERVICE_VERSION } from '../../core/service-info.js';
import { Type } from 'typebox';

/** GET /status: health for uptime monitors. Never rate-limited, never cached. */
export const healthRoutes: FastifyPluginAsyncTypebox<{ clock: Clock }> = async (app, { clock }) => {
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
      reply.header('Cache-Control', 'no-store');
      return {
        status: 'OK' as const,
        timestamp: new Date(clock.now()).toISOString(),
        service: SERVICE_NAME,
        version: SERVICE_VERSION,
      };
    },
  );
};
