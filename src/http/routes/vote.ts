/**
 * POST /vote: one Votifier test vote for a server's owner (docs/votes.md), on the vote tier of
 * the rate limits (RATE_LIMIT_VOTE). The vote service does the work; nothing of the request is
 * kept, logged or traced.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ObserverError } from '../../core/errors.js';
import type { VoteService } from '../../vote/service.js';
import { MIN_PUBLIC_VOTE_PORT, VOTE_DEFAULTS, type VoteRequest as ServiceRequest } from '../../vote/service.js';
import { errorResponses, headers, json } from '../contract.js';
import { tierConfig } from '../rate-limit.js';
import { VoteRequest } from '../schemas.js';

export interface VoteRouteOptions {
  votes: VoteService;
  /** Refuses the connection while the instance sheds load (503 `overloaded`). */
  admitPing: () => void;
  /** Wall-clock milliseconds: a vote's default timestamp. */
  now: () => number;
  deadlineMs: number;
}

/** The service's request from the body, its defaults filled in. */
export function voteRequestOf(body: VoteRequest, now: () => number): ServiceRequest {
  return {
    host: body.host,
    port: body.port ?? VOTE_DEFAULTS.port,
    vote: { service: body.service ?? VOTE_DEFAULTS.service, username: body.username, address: body.address ?? VOTE_DEFAULTS.address, timestamp: body.timestamp ?? now() },
    token: body.token,
    publicKey: body.public_key,
  };
}

function description(deadlineMs: number): string {
  return (
    'Sends one test vote to a Votifier (v1, RSA: give `public_key`) or NuVotifier (v2: give `token`) and says what the server ' +
    'did with it. The protocol follows the greeting: a token for a server that greets v1, or a key for one that greets v2, ' +
    'is `wrong_version`, with nothing sent. Whatever happens after the request is accepted is a 200 with ' +
    '`sent` and, when false, `error_code`. The vote has PING_TIMEOUT_MS ' +
    `(${deadlineMs} ms) from resolving the host to the answer. A connection that cannot be made (a closed port, a filtered ` +
    'one, an unreachable host) is `connection_refused`, answered only once that deadline has passed, so that no answer tells ' +
    `which it was. The host must resolve to public addresses (TARGET_ALLOWLIST excepted) and, on a public address, the port be ${MIN_PUBLIC_VOTE_PORT} ` +
    'or above (400 `target_refused`); a name without records is a 404. Each vote draws on the target IP\'s pings of the minute ' +
    '(429 `target_rate_limited`) and the client\'s vote rate limit, RATE_LIMIT_VOTE a minute (429 `rate_limited`). ' +
    'The token, the key and the username are never stored, logged or shown. `VOTES_ENABLED=false` turns the route off (404).'
  );
}

export const voteRoutes: FastifyPluginAsyncTypebox<VoteRouteOptions> = async (app, { votes, admitPing, now, deadlineMs }) => {
  app.post(
    '/vote',
    {
      config: tierConfig('vote'),
      schema: {
        operationId: 'sendTestVote',
        summary: 'Send a Votifier test vote',
        description: description(deadlineMs),
        tags: ['votes'],
        security: [],
        body: VoteRequest,
        response: {
          200: json('What the server did with the vote.', Type.Ref('VoteAnswer'), headers('Cache-Control!', 'RateLimit-Policy', 'RateLimit')),
          ...errorResponses(
            {
              400: ['invalid_parameter', 'invalid_body', 'invalid_address', 'target_refused'],
              404: ['host_not_found'],
              413: ['body_too_large'],
              415: ['unsupported_media_type'],
              429: ['rate_limited', 'target_rate_limited'],
              503: ['overloaded'],
            },
            { limited: true, takesBody: true },
          ),
        },
      },
    },
    async (request, reply) => {
      reply.header('Cache-Control', 'no-store');
      return votes.send(voteRequestOf(request.body, now), admitPing);
    },
  );
};

/**
 * With VOTES_ENABLED=false (or no vote service), POST /vote is a 404 as for a path no route
 * serves, its JSON body and all (a path without a route would refuse a body with 413 first).
 * Hidden from the document, and not a known path: other methods stay 404 too.
 */
export function registerVotesOff(api: FastifyInstance): void {
  api.post('/vote', { schema: { hide: true, body: {} }, config: { ...tierConfig('general'), refusesMethod: true } }, async () => {
    throw new ObserverError('not_found', 404, 'No route POST /api/v1/vote: test votes are turned off on this instance.');
  });
}
