import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyError } from 'fastify';
import { Type } from 'typebox';
import type { Config } from '../../config/index.js';
import { answerError, publicError } from '../errors.js';
import { errorResponses, headers, json, withPathParameters } from '../contract.js';
import { AddressParameter, BooleanFlag, EditionParameter } from '../schemas.js';
import { queryRequest, type StatusAnswers } from '../status-answer.js';

/**
 * GET /status/{address}: the server status. The answer, its rate limit included, is written by
 * StatusAnswers (status-answer.ts), which also answers the plain requests the front takes
 * before Fastify; so is a request this schema refuses, charged like any other.
 */
export const statusRoutes: FastifyPluginAsyncTypebox<{ answers: StatusAnswers; config: Config }> = async (app, { answers, config }) => {
  app.get(
    '/status/:address',
    {
      errorHandler: (error: FastifyError, request, reply) =>
        error.validation ? answers.serve(request.raw, reply.hijack().raw, publicError(error)) : answerError(error, request, reply),
      schema: {
        operationId: 'getServerStatus',
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
        security: [],
        params: Type.Object({ address: AddressParameter }),
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
          200: json(
            'A `ServerStatus`; with `edition=auto`, an `EditionsStatus`, told apart by its `editions` field.',
            Type.Union([Type.Ref('ServerStatus'), Type.Ref('EditionsStatus')]),
            headers('X-Cache!', 'Cache-Control!', 'RateLimit-Policy!'),
          ),
          ...errorResponses(
            withPathParameters({
              400: ['invalid_address', 'invalid_query', 'invalid_parameter', 'target_refused'],
              404: ['host_not_found'],
              429: ['rate_limited', 'target_rate_limited'],
              503: ['service_busy', 'overloaded'],
            }),
            { limited: true },
          ),
        },
      },
    },
    (request, reply) => {
      const { legacy, bedrock, edition, query, queryPort } = request.query;
      const ask = { address: request.params.address, legacy, bedrock, edition, query: queryRequest(query, queryPort) };
      return answers.serve(request.raw, reply.hijack().raw, ask);
    },
  );
};
