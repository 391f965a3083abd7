/**
 * GET /history/{address}: a server's uptime and players over 24 hours, 7 or 30 days, in
 * buckets, read from the history store. General rate-limit tier. It reads checks only: a
 * request pings nothing and records nothing about the client.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Config } from '../../config/index.js';
import { ObserverError } from '../../core/errors.js';
import { editionOf } from '../../core/types.js';
import { defaultPort, parseAddress, parseQueryMode } from '../../resolve/index.js';
import { serverId } from '../../status/server-id.js';
import { HISTORY_RANGES, HISTORY_RANGE_NAMES, type Store } from '../../store/index.js';
import { tierConfig } from '../rate-limit.js';
import { errorResponses, headers, json, withPathParameters } from '../contract.js';
import { AddressParameter, BooleanFlag } from '../schemas.js';

/** Seconds a history answer may be cached: a new check lands at most this late in it. */
export const HISTORY_MAX_AGE_SECONDS = 60;

const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

const HistoryBucket = Type.Object(
  {
    time: Type.String({ format: 'date-time', description: 'Start of the bucket (UTC).' }),
    checks: Type.Integer({ minimum: 0, description: 'Checks in the bucket.' }),
    online: Type.Integer({ minimum: 0, description: 'Checks that found the server online.' }),
    players_avg: nullable(Type.Number({ minimum: 0, description: 'Average players over the online checks, 2 decimals; null without one.' })),
    players_max: nullable(Type.Integer({ minimum: 0, description: 'Most players seen in one check; null without an online check.' })),
  },
  { additionalProperties: false, title: 'HistoryBucket' },
);

/** The 200 body; registered by buildApp so that it is a named schema of the OpenAPI document. */
export const ServerHistory = Type.Object(
  {
    server_id: Type.String({ format: 'uuid' }),
    hostname: Type.String({ description: 'Host name or IP address as queried.' }),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    edition: Type.Union([Type.Literal('java'), Type.Literal('bedrock')]),
    range: Type.Enum(HISTORY_RANGE_NAMES),
    bucket_seconds: Type.Integer({ minimum: 1, description: 'Width of one bucket.' }),
    from: Type.String({ format: 'date-time', description: 'Start of the first bucket.' }),
    to: Type.String({ format: 'date-time', description: 'End of the last bucket (exclusive); it holds the time of the request.' }),
    checks: Type.Integer({ minimum: 0 }),
    online_checks: Type.Integer({ minimum: 0 }),
    uptime_percentage: nullable(
      Type.Number({ minimum: 0, maximum: 100, description: 'Online checks as a percentage of the checks, 2 decimals; null without a check.' }),
    ),
    buckets: Type.Array(HistoryBucket, { maxItems: 200, description: 'Every bucket of the range, oldest first, empty ones included.' }),
    stale: Type.Optional(
      Type.Literal(true, {
        description:
          'Only on an answer that is not the latest: the history database cannot answer and this is its last good answer, ' +
          'or an upgrade is copying the history into a new layout and this is what was stored before it began.',
      }),
    ),
  },
  { $id: 'ServerHistory', additionalProperties: false, title: 'ServerHistory' },
);

const RANGE_TEXT = HISTORY_RANGE_NAMES.map(
  (name) => `\`${name}\`: ${HISTORY_RANGES[name].rangeMs / HISTORY_RANGES[name].bucketMs} buckets of ${HISTORY_RANGES[name].bucketMs / 60_000} minutes`,
).join(', ');

export const uptimeRoutes: FastifyPluginAsyncTypebox<{ store: Store; config: Config; recorded: (serverId: string) => Promise<void> }> = async (
  app,
  { store, recorded },
) => {
  app.get(
    '/history/:address',
    {
      config: tierConfig('general'),
      schema: {
        operationId: 'getServerHistory',
        summary: 'Uptime and players history',
        description:
          "A server's checks over a range, in buckets whose edges are multiples of the bucket size since the epoch " +
          `(UTC): ${RANGE_TEXT}. The last bucket holds the time of the request. The server is named as in ` +
          '`/status/{address}` with the same `legacy` / `bedrock` flags (an address without a port means the default ' +
          'port). Only servers this service has checked have a history: any other is a 404 `not_found` (this endpoint ' +
          `never pings). Cached ${HISTORY_MAX_AGE_SECONDS} seconds. While the history database cannot answer, the ` +
          'last good answer is served with `stale: true` (`X-Cache: STALE`), or 503 `store_unavailable` without one; ' +
          'while a schema migration runs (after an upgrade), a 503 `migrating` with `Retry-After`, except while the ' +
          'history is copied into a new layout: then the history stored before the upgrade began is served with ' +
          '`stale: true`, and a server it does not hold is a 503 `migrating` (it may have been checked since).',
        tags: ['history'],
        security: [],
        params: Type.Object({ address: AddressParameter }),
        querystring: Type.Object({
          range: Type.Enum(HISTORY_RANGE_NAMES, { default: '24h', description: 'Time range.' }),
          legacy: BooleanFlag('The server as queried with the pre-1.7.2 Java protocol (same history as Java).'),
          bedrock: BooleanFlag('The Bedrock server; the default port becomes 19132.'),
        }),
        response: {
          200: json('The history.', Type.Ref('ServerHistory'), headers('Cache-Control!', 'X-Cache', 'RateLimit-Policy')),
          ...errorResponses(
            withPathParameters({
              400: ['invalid_address', 'invalid_query', 'invalid_parameter'],
              404: ['not_found'],
              429: ['rate_limited'],
              503: ['store_unavailable', 'migrating'],
            }),
            { limited: true },
          ),
        },
      },
    },
    async (request, reply) => {
      const { range, legacy, bedrock } = request.query;
      const mode = parseQueryMode(legacy, bedrock);
      const parsed = parseAddress(request.params.address);
      const id = serverId(editionOf(mode), parsed.host, parsed.port ?? defaultPort(mode));
      // The page that has just looked the server up asks next: its check counts once queued.
      await recorded(id);
      const history = await store.history(id, range);
      if (!history) throw new ObserverError('not_found', 404, 'This server has not been checked by this service yet.');
      reply.header('Cache-Control', `public, max-age=${history.stale ? 5 : HISTORY_MAX_AGE_SECONDS}`);
      if (history.stale) reply.header('X-Cache', 'STALE');
      return history;
    },
  );
};
