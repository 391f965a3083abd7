/**
 * GET /trends and GET /stats: the trend ranking and the platform statistics, read from the
 * history store. Both are on the general rate-limit tier.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Config } from '../../config/index.js';
import { TREND_SCORE_FORMULA } from '../../store/history/ranking.js';
import type { Store } from '../../store/types.js';
import { tierConfig } from '../rate-limit.js';
import { errorResponses, headers, json } from '../contract.js';

const Edition = Type.Union([Type.Literal('java'), Type.Literal('bedrock')]);

const TrendServer = Type.Object(
  {
    server_id: Type.String({ format: 'uuid' }),
    hostname: Type.String({ description: 'Host name or IP address as queried.' }),
    address: Type.String({
      description:
        '`hostname`, or `hostname:port` when the port is not the edition default (25565 Java, 19132 Bedrock); ' +
        'an IPv6 address with a port is written `[address]:port`.',
    }),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    edition: Edition,
    trend_score: Type.Number({ minimum: 0, description: TREND_SCORE_FORMULA }),
    is_online: Type.Literal(true, { description: 'Always true.' }),
    stale: Type.Literal(false, { description: 'Always false.' }),
    checked_at: Type.String({ format: 'date-time', description: 'Time of the latest check.' }),
    players_online: Type.Integer({ minimum: 0 }),
    players_max: Type.Integer({ minimum: 0 }),
    record_players: Type.Integer({ minimum: 0, description: 'Highest player count seen in the kept history.' }),
    uptime_percentage: Type.Number({
      minimum: 0,
      maximum: 100,
      description: 'Share of the checks of the last 7 days that found the server online, 2 decimals.',
    }),
  },
  { additionalProperties: false, title: 'TrendServer' },
);

/** Set only on an answer that is not the database's latest (X-Cache: STALE). */
const StaleField = Type.Optional(
  Type.Literal(true, {
    description:
      'Extra field, present only when the answer is not the latest (also marked `X-Cache: STALE`): the history ' +
      'database did not answer within a second and this is its last good answer to the same request, or an ' +
      'upgrade is copying the history into a new layout and this is what was stored before it began. Absent on a fresh answer.',
  }),
);

const TrendResponse = Type.Object(
  {
    success: Type.Literal(true),
    stale: StaleField,
    data: Type.Array(TrendServer),
    meta: Type.Object(
      {
        nextCursor: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], {
          description: '`server_id` of the last item, to pass as `cursor`; null on the last page.',
        }),
        hasNext: Type.Boolean(),
        limit: Type.Integer(),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, title: 'TrendResponse' },
);

const TrendsQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 50, default: 10, description: 'Servers per page, 1 to 50.' }),
  cursor: Type.Optional(
    Type.String({ format: 'uuid', description: '`meta.nextCursor` of the previous page. Not given: the first page.' }),
  ),
});

const RecentCheck = Type.Object(
  {
    hostname: Type.String(),
    port: Type.Integer(),
    edition: Edition,
    online: Type.Boolean(),
    players: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'null when offline.' }),
    checked_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false, title: 'RecentCheck' },
);

const Statistics = Type.Object(
  {
    totalRequests: Type.Integer({ minimum: 0, description: 'Every HTTP request served, all time.' }),
    apiRequests: Type.Integer({ minimum: 0, description: 'Requests under /api/v1 except the health check, all time.' }),
    serverQueries: Type.Integer({ minimum: 0, description: 'Server status look-ups, all time.' }),
    totalChecks: Type.Integer({ minimum: 0, description: 'Pings performed, all time.' }),
    onlineServers: Type.Integer({ minimum: 0, description: 'Servers whose latest check, in the last 24 hours, was online.' }),
    offlineServers: Type.Integer({ minimum: 0, description: 'Servers whose latest check, in the last 24 hours, was offline.' }),
    activePlayers: Type.Integer({ minimum: 0, description: 'Players on the servers counted in `onlineServers`.' }),
    onlineRate: Type.Number({ minimum: 0, maximum: 100, description: '`onlineServers` as a percentage of both counts, 2 decimals.' }),
    recentChecks: Type.Array(RecentCheck, { description: 'The last 10 checks, newest first.' }),
    stale: StaleField,
  },
  { additionalProperties: false, title: 'Statistics' },
);

/** What /trends and /stats do while the history database is down (docs/api.md). */
const STORE_OUTAGE_NOTE =
  'While the history database is slow or unreachable the answer never waits more than about a second: ' +
  'the last good answer to the same request is served with `stale: true` and `X-Cache: STALE`, or, when ' +
  'there is none, a 503 `store_unavailable` with `Retry-After`. While a schema migration runs (after an upgrade), ' +
  'a 503 `migrating` with `Retry-After`, except while the history is copied into a new layout: then the ' +
  'answer is read from the previous one, with `stale: true` (the checks made since the upgrade began are added when it ends).';

/**
 * Headers of a store read: `X-Cache: STALE` on the last good answer (then `no-store`, so the
 * client's `RateLimit` comes along), `public` caching otherwise.
 */
const READ_HEADERS = headers('Cache-Control!', 'X-Cache', 'RateLimit-Policy', 'RateLimit');

/** `urn:uuid:` and upper case pass the uuid format; server ids are stored bare, lower case. */
function normaliseUuid(value: string): string {
  return value.toLowerCase().replace(/^urn:uuid:/, '');
}

export const historyRoutes: FastifyPluginAsyncTypebox<{ store: Store; config: Config; recorded: () => Promise<void> }> = async (
  app,
  { store, recorded },
) => {
  app.get(
    '/trends',
    {
      config: tierConfig('general'),
      schema: {
        operationId: 'getTrends',
        summary: 'Trending online servers',
        description:
          'Servers whose latest check found them online less than 30 minutes ago, most popular first: ' +
          `${TREND_SCORE_FORMULA} Order: \`trend_score\` descending, then \`server_id\` ascending.\n\n` +
          'Pagination is by keyset: pass `meta.nextCursor` as `cursor` for the next page, which holds the ' +
          'servers ranked after that server. Pages are cut from a snapshot of the ranking, taken when checks ' +
          'or look-ups were made since the last one (or it is a second old), and the next page of a chain ' +
          'is cut from the same snapshot as the page that gave its cursor, for 60 seconds: a chain never ' +
          'repeats or skips a server of the ranking its first page was cut from, whatever checks land ' +
          'between pages. Past that, the page continues after the cursor server in the latest ranking, or ' +
          'from where its current score places it when it has left the ranking. A cursor that is not a UUID, or names a server this service does ' +
          'not know (any more), is a 400 (`invalid_parameter`, `invalid_cursor`). Cached 30 seconds.\n\n' +
          STORE_OUTAGE_NOTE,
        tags: ['trends'],
        security: [],
        querystring: TrendsQuery,
        response: {
          200: json('A page of the ranking.', TrendResponse, READ_HEADERS),
          ...errorResponses(
            { 400: ['invalid_parameter', 'invalid_cursor'], 429: ['rate_limited'], 503: ['store_unavailable', 'migrating'] },
            { limited: true },
          ),
        },
      },
    },
    async (request, reply) => {
      const { limit, cursor } = request.query;
      // A first page counts every look-up answered before it, also one whose check is still
      // being decided (is the server known?) when this request arrives.
      if (cursor === undefined) await recorded();
      const page = await store.trends(limit, cursor === undefined ? null : normaliseUuid(cursor));
      if (page.stale) {
        reply.header('Cache-Control', 'no-store').header('X-Cache', 'STALE');
        return {
          success: true as const,
          stale: true as const,
          data: page.data,
          meta: { nextCursor: page.nextCursor, hasNext: page.hasNext, limit },
        };
      }
      reply.header('Cache-Control', 'public, max-age=30');
      return {
        success: true as const,
        data: page.data,
        meta: { nextCursor: page.nextCursor, hasNext: page.hasNext, limit },
      };
    },
  );

  app.get(
    '/stats',
    {
      config: tierConfig('general'),
      schema: {
        operationId: 'getStatistics',
        summary: 'Platform statistics',
        description:
          'All-time request and check counters (they survive restarts), servers by their latest check of the ' +
          'last 24 hours, and the last 10 checks. Computed at most once per 60 seconds and cached as long.\n\n' +
          STORE_OUTAGE_NOTE,
        tags: ['stats'],
        security: [],
        response: {
          200: json('The statistics.', Statistics, READ_HEADERS),
          ...errorResponses({ 429: ['rate_limited'], 503: ['store_unavailable', 'migrating'] }, { limited: true }),
        },
      },
    },
    async (_request, reply) => {
      const stats = await store.stats();
      if (stats.stale) reply.header('Cache-Control', 'no-store').header('X-Cache', 'STALE');
      else reply.header('Cache-Control', 'public, max-age=60');
      return stats;
    },
  );
};
