/**
 * /watches: create a watch, read or end it with its management token, ask for its owner's
 * proof now, send a test delivery (docs/watches.md). General rate-limit tier.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { clientNetwork } from '../../core/client-hash.js';
import type { WatchRow } from '../../store/watches/watch-store.js';
import type { WatchService } from '../../watch/index.js';
import { tierConfig } from '../rate-limit.js';
import { empty, errorResponses, headers, json, withPathParameters, type RouteErrors } from '../contract.js';
import { MigratingError } from '../../store/errors.js';
import { watchView } from './watch-view.js';

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

const AttemptResult = Type.Union([Type.Literal('delivered'), Type.Literal('refused'), Type.Literal('failed')], {
  description: '`delivered`: a 2xx answer; `refused`: another answer (see `status_code`); `failed`: no answer, whatever the reason.',
});

const Delivery = Type.Object({
  sequence: Type.Integer({ description: 'The event, per watch; 0 for a test delivery.' }),
  event: Type.String(),
  attempt: Type.Integer({ minimum: 1 }),
  at: Type.String({ format: 'date-time' }),
  result: AttemptResult,
  status_code: Nullable(Type.Integer({ description: 'The webhook\'s HTTP status; null when it did not answer.' })),
}, { additionalProperties: false });

const Watch = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    address: Type.String(),
    edition: Edition,
    webhook: Type.Object({ kind: Type.Union([Type.Literal('discord'), Type.Literal('json')]), host: Type.String() }, { additionalProperties: false }),
    players_at_least: Nullable(Type.Integer()),
    page_url: Nullable(Type.String({ description: 'The server\'s page under PUBLIC_URL, as deliveries link to it; null when PUBLIC_URL is not set.' })),
    created_at: Type.String({ format: 'date-time' }),
    verification: Type.Object({
      verified: Type.Boolean(),
      method: Nullable(Type.Union([Type.Literal('motd'), Type.Literal('dns')])),
      verified_at: Nullable(Type.String({ format: 'date-time' })),
      expires_at: Nullable(Type.String({ format: 'date-time', description: 'An unverified watch is deleted then.' })),
      token: Type.String({ description: 'Put it in the server\'s MOTD, or publish `txt_value` at `txt_name`; keep it there.' }),
      txt_name: Nullable(
        Type.String({
          description: '`_observer.<name>`, where `<name>` is the name checks connect to (the SRV target, CNAMEs followed); null for a server reached by IP address (MOTD only).',
        }),
      ),
      txt_value: Nullable(Type.String({ description: '`observer-verify=<token>`; null when `txt_name` is.' })),
      proof_seen_at: Nullable(Type.String({ format: 'date-time', description: 'When the proof was last seen; checks keep looking for it.' })),
      paused_at: Nullable(Type.String({ format: 'date-time', description: 'Set while the watch is paused: its proof was not seen for WATCH_PROOF_GRACE_DAYS.' })),
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
      Type.String({ description: '`json` webhooks only, shown once: `whsec_<base64>`, the Standard Webhooks key of `webhook-signature`.' }),
    ),
    watch: Watch,
  },
  { additionalProperties: false, title: 'CreatedWatch' },
);

const TestResult = Type.Object({
  delivered: Type.Boolean(),
  result: AttemptResult,
  status_code: Nullable(Type.Integer()),
}, { additionalProperties: false });

const WatchParams = Type.Object({ id: Type.String({ maxLength: 64, examples: ['0b6f4c1e-5d2a-4e8b-9c3f-7a1d2e3f4a5b'] }) });
const security = [{ bearerAuth: [] as string[] }];
/** What a route on one watch can refuse: its id, its token, its limits. */
const MANAGED_ERRORS = { 400: ['invalid_parameter'], 401: ['unauthorized'], 404: ['watch_not_found'], 429: ['rate_limited'], 503: ['migrating'] } satisfies RouteErrors;
/** The headers of a watch answer: never cached. */
const WATCH_HEADERS = headers('Cache-Control!', 'RateLimit-Policy', 'RateLimit');

/** The bearer token of the request, or null. */
function bearer(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  const match = header === undefined ? null : /^Bearer\s+([A-Za-z0-9_-]{1,128})\s*$/i.exec(header);
  return match ? match[1]! : null;
}

/** A watch as GET shows it. */
async function shown(watches: WatchService, watch: WatchRow) {
  return watchView(watch, await watches.details(watch), watches.publicUrl);
}

export const watchRoutes: FastifyPluginAsyncTypebox<{ watches: WatchService; migrating?: () => boolean }> = async (app, { watches, migrating }) => {
  // Watches live in the database: while its schema is migrated, none can be read or written.
  if (migrating) {
    app.addHook('onRequest', async () => {
      if (migrating()) throw new MigratingError();
    });
  }
  app.post(
    '/watches',
    {
      config: tierConfig('general'),
      schema: {
        operationId: 'createWatch',
        summary: 'Watch a server',
        description:
          'Creates a watch: once its owner has proven control of the server (the verification token in the MOTD, ' +
          'or `observer-verify=<token>` in a TXT record at `verification.txt_name`), Observer checks the server every ' +
          'WATCH_INTERVAL_MINUTES and sends one delivery when it goes offline (after flap damping) or comes back ' +
          '(and when `players_at_least` is reached). Nothing is sent before verification; unverified watches ' +
          'expire after WATCH_VERIFY_HOURS. The management token (and, for `json`, the signing secret) is shown once. ' +
          'A webhook URL on a non-public address or a system port is a 400 `webhook_refused`; a client over ' +
          'WATCHES_UNVERIFIED_PER_CLIENT or WATCHES_PER_CLIENT, a 409 `too_many_unverified` or `too_many_watches`; an ' +
          'instance holding WATCHES_MAX verified watches, a 429 `watch_capacity`; a webhook host name DNS cannot ' +
          'resolve just now, a 503 `webhook_dns_failure`.',
        tags: ['watches'],
        security: [],
        body: CreateWatch,
        response: {
          201: json('The watch, with its management token (and signing secret) shown this once.', CreatedWatch, WATCH_HEADERS),
          ...errorResponses(
            {
              400: ['invalid_parameter', 'invalid_address', 'invalid_webhook', 'webhook_refused', 'webhook_not_found'],
              409: ['too_many_unverified', 'too_many_watches'],
              429: ['rate_limited', 'watch_capacity'],
              503: ['webhook_dns_failure', 'migrating'],
            },
            { limited: true, takesBody: true },
          ),
        },
      },
    },
    async (request, reply) => {
      // The client's network (IPv4 address or IPv6 /48) goes to the service only to be hashed.
      const created = await watches.create({ ...request.body, edition: request.body.edition ?? 'java' }, clientNetwork(request.ip, 48));
      reply.code(201).header('Cache-Control', 'no-store');
      return {
        id: created.watch.id,
        management_token: created.managementToken,
        ...(created.signingSecret !== null ? { signing_secret: created.signingSecret } : {}),
        watch: await shown(watches, created.watch),
      };
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
      return shown(watches, watch);
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
      'Reads the MOTD fresh (waiting up to PING_TIMEOUT_MS for a refresh; a stale status proves nothing) and the TXT record now. ' +
        'A proven watch a cap keeps unverified: 409 `too_many_server_watches` (WATCHES_PER_SERVER) or 429 `watch_capacity` (WATCHES_MAX).',
      { 200: json('The watch, verified or not.', Watch, WATCH_HEADERS) },
      { ...MANAGED_ERRORS, 409: ['too_many_server_watches'], 429: ['rate_limited', 'watch_capacity'] },
    ),
    async (request, reply) => {
      const watch = await watches.verifyNow(await authorised(request));
      reply.header('Cache-Control', 'no-store');
      return shown(watches, watch);
    },
  );

  app.post(
    '/watches/:id/test',
    managedRoute(
      'testWatch',
      'Send a test delivery',
      'One delivery of event `test` (sequence 0, a `webhook-id` of its own), not retried; at most one a minute per watch ' +
        '(429 `test_rate_limited`) and within the webhook host\'s budget (429 `webhook_rate_limited`); a 409 `not_verified` ' +
        'before verification or while paused.',
      { 200: json('What the webhook answered.', TestResult, WATCH_HEADERS) },
      { ...MANAGED_ERRORS, 409: ['not_verified'], 429: ['rate_limited', 'test_rate_limited', 'webhook_rate_limited'], 503: ['shutting_down', 'webhook_dns_failure', 'migrating'] },
    ),
    async (request, reply) => {
      const result = await watches.test(await authorised(request));
      reply.header('Cache-Control', 'no-store');
      return { delivered: result.result === 'delivered', result: result.result, status_code: result.statusCode };
    },
  );
};
