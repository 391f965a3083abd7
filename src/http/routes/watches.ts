/**
 * /watches: create a watch, read or end it with its management token, ask for its owner's
 * proof now, send a test delivery (docs/api.md, "Watches"). General rate-limit tier.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { ClientHasher } from '../../core/client-hash.js';
import type { WatchService } from '../../watch/service.js';
import { clientKeyOf } from '../client-key.js';
import { tierConfig } from '../rate-limit.js';
import { empty, errorResponses, headers, json, withPathParameters, type RouteErrors } from '../contract.js';

const Edition = Type.Union([Type.Literal('java'), Type.Literal('bedrock')]);
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

const CreateWatch = Type.Object(
  {
    address: Type.String({ minLength: 1, maxLength: 255, description: 'The server, as for `/status/{address}`.' }),
    edition: Type.Optional(Type.Union([Type.Literal('java'), Type.Literal('bedrock')], { default: 'java' })),
    webhook: Type.Object(
      {
        kind: Type.Union([Type.Literal('discord'), Type.Literal('json')], {
          description: '`discord`: a Discord webhook URL gets an embed; `json`: the event body, signed.',
        }),
        url: Type.String({ minLength: 1, maxLength: 2048, description: 'http(s) URL on a public address; redirects are not followed.' }),
      },
      { additionalProperties: false },
    ),
    players_at_least: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'Also deliver once each time the player count reaches this number.' }),
    ),
  },
  { additionalProperties: false, title: 'CreateWatch' },
);

const Delivery = Type.Object({
  sequence: Type.Integer({ description: 'The event, per watch; 0 for a test delivery.' }),
  event: Type.String(),
  attempt: Type.Integer({ minimum: 1 }),
  at: Type.String({ format: 'date-time' }),
  status_code: Nullable(Type.Integer()),
  error: Nullable(Type.String({ description: 'Why the attempt failed; null when the webhook answered 2xx.' })),
}, { additionalProperties: false });

const Watch = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    address: Type.String(),
    edition: Edition,
    webhook: Type.Object({ kind: Type.Union([Type.Literal('discord'), Type.Literal('json')]), host: Type.String() }, { additionalProperties: false }),
    players_at_least: Nullable(Type.Integer()),
    page_url: Type.String({ description: 'The server\'s page, as deliveries link to it.' }),
    created_at: Type.String({ format: 'date-time' }),
    verification: Type.Object({
      verified: Type.Boolean(),
      method: Nullable(Type.Union([Type.Literal('motd'), Type.Literal('dns')])),
      verified_at: Nullable(Type.String({ format: 'date-time' })),
      expires_at: Nullable(Type.String({ format: 'date-time', description: 'An unverified watch is deleted then.' })),
      token: Type.String({ description: 'Put it in the server\'s MOTD, or publish `txt_value` at `txt_name`.' }),
      txt_name: Nullable(Type.String({ description: '`_observer.<host>`; null for a server given by IP address (MOTD only).' })),
      txt_value: Nullable(Type.String({ description: '`observer-verify=<token>`; null for a server given by IP address.' })),
    }, { additionalProperties: false }),
    state: Type.Union([Type.Literal('unknown'), Type.Literal('online'), Type.Literal('offline')]),
    last_checked_at: Nullable(Type.String({ format: 'date-time' })),
    pending_deliveries: Type.Integer({ minimum: 0 }),
    deliveries: Type.Array(Delivery, { description: 'The latest attempts, newest first (at most 20).' }),
  },
  { additionalProperties: false, title: 'Watch' },
);

const CreatedWatch = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    management_token: Type.String({ description: 'Shown once: send it as `Authorization: Bearer <token>`.' }),
    signing_secret: Type.Optional(
      Type.String({ description: '`json` webhooks only, shown once: the key of `X-Observer-Signature` (HMAC-SHA256 of the body).' }),
    ),
    watch: Watch,
  },
  { additionalProperties: false, title: 'CreatedWatch' },
);

const TestResult = Type.Object({
  delivered: Type.Boolean(),
  status_code: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
}, { additionalProperties: false });

const WatchParams = Type.Object({ id: Type.String({ maxLength: 64, examples: ['0b6f4c1e-5d2a-4e8b-9c3f-7a1d2e3f4a5b'] }) });
const security = [{ bearerAuth: [] as string[] }];
/** What a route on one watch can refuse: its id, its token, its limits. */
const MANAGED_ERRORS = { 400: ['invalid_parameter'], 401: ['unauthorized'], 404: ['watch_not_found'], 429: ['rate_limited'] } satisfies RouteErrors;
/** The headers of a watch answer: never cached. */
const WATCH_HEADERS = headers('Cache-Control!', 'RateLimit-Policy', 'RateLimit');

/** The bearer token of the request, or null. */
function bearer(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  const match = header === undefined ? null : /^Bearer\s+([A-Za-z0-9_-]{1,128})\s*$/i.exec(header);
  return match ? match[1]! : null;
}

export const watchRoutes: FastifyPluginAsyncTypebox<{ watches: WatchService; hasher: ClientHasher }> = async (app, { watches, hasher }) => {
  app.post(
    '/watches',
    {
      config: tierConfig('general'),
      schema: {
        operationId: 'createWatch',
        summary: 'Watch a server',
        description:
          'Creates a watch: once its owner has proven control of the server (the verification token in the MOTD, ' +
          'or `observer-verify=<token>` in a TXT record at `_observer.<host>`), Observer checks the server every ' +
          'WATCH_INTERVAL_MINUTES and sends one delivery when it goes offline (after flap damping) or comes back ' +
          '(and when `players_at_least` is reached). Nothing is sent before verification; unverified watches ' +
          'expire after WATCH_VERIFY_HOURS. The management token (and, for `json`, the signing secret) is shown once. ' +
          'A webhook URL on a non-public address is a 400 `webhook_refused`; too many unverified watches for one ' +
          'client, a 409 `too_many_unverified`; a webhook host name DNS cannot resolve just now, a 503 `webhook_dns_failure`.',
        tags: ['watches'],
        security: [],
        body: CreateWatch,
        response: {
          201: json('The watch, with its management token (and signing secret) shown this once.', CreatedWatch, WATCH_HEADERS),
          ...errorResponses(
            {
              400: ['invalid_parameter', 'invalid_body', 'invalid_address', 'invalid_webhook', 'webhook_refused', 'webhook_not_found'],
              409: ['too_many_unverified'],
              413: ['body_too_large'],
              415: ['unsupported_media_type'],
              429: ['rate_limited'],
              503: ['webhook_dns_failure'],
            },
            { limited: true, takesBody: true },
          ),
        },
      },
    },
    async (request, reply) => {
      const origin = `${request.protocol}://${request.host}`;
      const created = await watches.create({ ...request.body, edition: request.body.edition ?? 'java' }, clientKeyOf(request, hasher), origin);
      reply.code(201).header('Cache-Control', 'no-store');
      return created;
    },
  );

  /** The options of a route on one watch: general tier, the id parameter, the bearer token. */
  const managedRoute = <R extends Record<number, unknown>>(operationId: string, summary: string, description: string, response: R, errors: RouteErrors = MANAGED_ERRORS) => ({
    config: tierConfig('general'),
    schema: {
      operationId,
      summary,
      description,
      tags: ['watches'],
      security,
      params: WatchParams,
      response: { ...errorResponses(withPathParameters(errors), { limited: true }), ...response },
    },
  });
  const authorised = (request: { params: { id: string } } & FastifyRequest) => watches.authorised(request.params.id, bearer(request));

  app.get(
    '/watches/:id',
    managedRoute('getWatch', 'A watch: state, verification, recent deliveries', 'Never shows the management token or the signing secret.', {
      200: json('The watch.', Watch, WATCH_HEADERS),
    }),
    async (request, reply) => {
      const watch = await authorised(request);
      reply.header('Cache-Control', 'no-store');
      return watches.view(watch);
    },
  );

  app.delete(
    '/watches/:id',
    managedRoute('deleteWatch', 'End a watch', 'Deletes the watch, its pending deliveries and its log.', {
      204: empty('The watch is gone.', headers('RateLimit-Policy', 'RateLimit')),
    }),
    async (request, reply) => {
      await watches.delete(await authorised(request));
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/watches/:id/verify',
    managedRoute(
      'verifyWatch',
      'Look for the owner\'s proof now',
      'Checks the MOTD (as the status cache has it, up to STATUS_CACHE_TTL old) and the TXT record now.',
      { 200: json('The watch, verified or not.', Watch, WATCH_HEADERS) },
    ),
    async (request, reply) => {
      const watch = await watches.verifyNow(await authorised(request));
      reply.header('Cache-Control', 'no-store');
      return watches.view(watch);
    },
  );

  app.post(
    '/watches/:id/test',
    managedRoute(
      'testWatch',
      'Send a test delivery',
      'One delivery of event `test` (sequence 0), not retried; a 409 `not_verified` before verification.',
      { 200: json('What the webhook answered.', TestResult, WATCH_HEADERS) },
      { ...MANAGED_ERRORS, 409: ['not_verified'] },
    ),
    async (request, reply) => {
      const result = await watches.test(await authorised(request));
      reply.header('Cache-Control', 'no-store');
      return { delivered: result.error === null, status_code: result.statusCode, error: result.error };
    },
  );
};
