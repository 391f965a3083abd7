import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Config } from '../../config/index.js';
import type { ClientHasher } from '../../core/client-hash.js';
import { ObserverError } from '../../core/errors.js';
import { lookupEditions, parseEditionChoice } from '../../status/editions.js';
import type { StatusLookup } from '../../status/types.js';
import { lookupKeyOf } from '../client-key.js';
import { tierConfig } from '../rate-limit.js';
import { errorResponses, headers, json } from '../contract.js';
import { BulkRequest } from '../schemas.js';
import { statusBody } from '../../status/cache.js';
import { queryRequest, statusLookupOptions } from '../status-answer.js';

export const MAX_BULK_ENTRIES = 50;
/** Pings one bulk request may have in flight at once (cached entries answer without one). */
export const BULK_CONCURRENCY = 8;

/** Runs `task` over `items` with at most `limit` at once; results keep the order of `items`. */
async function mapBounded<T, R>(items: readonly T[], limit: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Units the rate limiter counts: one per entry (a malformed body counts one, and fails validation). */
function entries(request: FastifyRequest): number {
  const servers = (request.body as { servers?: unknown } | undefined)?.servers;
  return Array.isArray(servers) ? Math.max(1, servers.length) : 1;
}

/** POST /status/bulk: many look-ups in one request, sharing the cache and coalescing. */
export const bulkRoutes: FastifyPluginAsyncTypebox<{ status: StatusLookup; config: Config; hasher: ClientHasher; admitPing: () => void }> = async (
  app,
  { status, config, hasher, admitPing },
) => {
  app.post(
    '/status/bulk',
    {
      config: { ...tierConfig('status'), rateUnits: entries },
      schema: {
        operationId: 'getServerStatuses',
        summary: 'Many server statuses at once',
        description:
          `Up to ${MAX_BULK_ENTRIES} look-ups in one request; \`results\` holds one entry per server, in the same order: ` +
          'a `ServerStatus` (an `EditionsStatus` for an entry with `edition: auto`), or `{address, error, message}` with the code the single endpoint would give ' +
          `(\`invalid_address\`, \`host_not_found\`, \`target_refused\`, …). Each entry counts as one request against the ` +
          `status rate limit; a request that would exceed it is refused (429) before any ping. At most ${BULK_CONCURRENCY} ` +
          `pings run at once per request. Body at most \`HTTP_BODY_LIMIT_BYTES\` (${config.http.bodyLimitBytes} bytes; 413 \`body_too_large\`), ` +
          'sent as `application/json` (415 `unsupported_media_type` otherwise).',
        tags: ['status'],
        security: [],
        body: BulkRequest,
        response: {
          200: json('One result per entry.', Type.Ref('BulkResponse'), headers('Cache-Control!', 'RateLimit-Policy', 'RateLimit')),
          ...errorResponses({ 400: ['invalid_parameter'], 429: ['rate_limited'] }, { limited: true, takesBody: true }),
        },
      },
    },
    async (request, reply) => {
      const clientKey = lookupKeyOf(request, hasher);
      const results = await mapBounded(request.body.servers, BULK_CONCURRENCY, async (entry) => {
        try {
          const mode = parseEditionChoice(entry.edition, entry.legacy ?? false, entry.bedrock ?? false);
          const options = statusLookupOptions(clientKey, admitPing, queryRequest(entry.query, entry.queryPort));
          if (mode === 'auto') return (await lookupEditions(status, entry.address, options)).body;
          return statusBody((await status.lookup(entry.address, mode, options)).status);
        } catch (error) {
          if (!(error instanceof ObserverError)) throw error;
          return JSON.stringify({ address: entry.address, error: error.code, message: error.message });
        }
      });
      reply.type('application/json; charset=utf-8');
      reply.header('Cache-Control', 'no-store');
      return `{"results":[${results.join(',')}]}`;
    },
  );
};
