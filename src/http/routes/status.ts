import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Config } from '../../config/index.js';
import type { ClientHasher } from '../../core/client-hash.js';
import { statusBody } from '../../status/cache.js';
import { lookupEditions, parseEditionChoice } from '../../status/editions.js';
import type { LookupOptions, StatusLookup } from '../../status/types.js';
import { lookupKeyOf } from '../client-key.js';
import { tierConfig } from '../rate-limit.js';
import { BooleanFlag, EditionParameter } from '../schemas.js';

/** Look-up options for a request's `query`/`queryPort` (shared with the bulk route). */
export function statusLookupOptions(
  query: boolean | undefined,
  queryPort: number | undefined,
  clientKey: string,
  admitPing: () => void,
): LookupOptions {
  const options: LookupOptions = { clientKey, beforePing: admitPing };
  if (query) options.query = queryPort === undefined ? {} : { port: queryPort };
  return options;
}

/** `Cache-Control` values by max-age, built once each (the fast path's answers too). */
const cacheControls: string[] = [];
export function cacheControl(maxAgeSeconds: number): string {
  return (cacheControls[maxAgeSeconds] ??= `public, max-age=${maxAgeSeconds}`);
}

/** GET /status/{address}: the server status. */
export const statusRoutes: FastifyPluginAsyncTypebox<{ status: StatusLookup; config: Config; hasher: ClientHasher; admitPing: () => void }> = async (
  app,
  { status, config, hasher, admitPing },
) => {
  app.get(
    '/status/:address',
    {
      config: tierConfig('status'),
      schema: {
        summary: 'Server status',
        description:
          'Pings a Minecraft server and returns its status. `address` is a host name or IP, optionally with `:port` ' +
          '(`[IPv6]:port` for IPv6). Only public addresses are queried. A resolvable host whose ping fails is a 200 ' +
          'with `online: false` and `error` set; 404 only when the host name has no A, AAAA or SRV record. ' +
          `Results are cached ${config.statusCacheTtlSeconds} s (failures too); a success is then served with ` +
          '`stale: true` for up to 5 more minutes while it is refreshed. `X-Cache` says HIT, MISS or STALE. ' +
          `One server IP is pinged at most ${config.targetPingsPerMinute} times a minute, whatever the name or client: ` +
          'past that the last success under 24 hours old is served stale, or the answer is 429 `target_rate_limited`.',
        tags: ['status'],
        params: Type.Object({ address: Type.String({ minLength: 1, maxLength: 255, description: 'host, host:port, IPv4, [IPv6]:port or IPv6' }) }),
        querystring: Type.Object({
          legacy: BooleanFlag('Use the pre-1.7.2 Java ping protocol.'),
          bedrock: BooleanFlag('Use the Bedrock query; the default port becomes 19132.'),
          edition: EditionParameter,
          query: BooleanFlag(
            'Also run a Query (GS4 full stat, UDP) beside the ping, within the same timeout: adds `queryResult` ' +
              '(player names, plugins, software, map). Cached separately from the plain status.',
          ),
          queryPort: Type.Optional(
            Type.Integer({ minimum: 1, maximum: 65535, description: 'UDP port of the Query (`query.port`); default: the game port. Only with `query=true`.' }),
          ),
        }),
        response: {
          200: Type.Union([Type.Ref('ServerStatus'), Type.Ref('EditionsStatus')], {
            description: 'A `ServerStatus`; with `edition=auto`, an `EditionsStatus`.',
          }),
          400: Type.Ref('ErrorResponse'),
          404: Type.Ref('ErrorResponse'),
          429: Type.Ref('ErrorResponse'),
          503: Type.Ref('ErrorResponse'),
        },
      },
    },
    async (request, reply) => {
      const mode = parseEditionChoice(request.query.edition, request.query.legacy, request.query.bedrock);
      const options = statusLookupOptions(request.query.query, request.query.queryPort, lookupKeyOf(request, hasher), admitPing);
      const answer =
        mode === 'auto'
          ? await lookupEditions(status, request.params.address, options)
          : await status.lookup(request.params.address, mode, options).then((a) => ({ ...a, body: statusBody(a.status) }));
      reply.header('x-cache', answer.cache);
      reply.header('cache-control', cacheControl(answer.maxAgeSeconds));
      reply.header('content-type', 'application/json; charset=utf-8');
      return answer.body;
    },
  );
};
