/**
 * buildApp: the HTTP layer, assembled from its dependencies without listening.
 * Plugins in a fixed order: external (CORS, maintenance gate, rate limits, OpenAPI), then the
 * app's error handling and logging, then routes.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyBaseLogger } from 'fastify';
import ipaddr from 'ipaddr.js';
import type { Config } from '../config/index.js';
import { cacheBudget } from '../core/cache-budget.js';
import { ClientHasher } from '../core/client-hash.js';
import { systemClock, type Clock } from '../core/clock.js';
import { ObserverError } from '../core/errors.js';
import { createServer as createHttpServer } from '../core/node-http.js';
import { SERVICE_NAME, SERVICE_VERSION } from '../core/service-info.js';
import { registerParameterGrammar } from './parameter-grammar.js';
import { Admission } from './admission.js';
import { clientAddress, clientKeyOf, type TrustProxy } from './client-key.js';
import { corsStep, registerPreflight } from './cors.js';
import { answerFrameworkError, registerErrorHandling, registerNotFound } from './errors.js';
import { bodyRefusalStep, limitConnectionsPerClient, serverTimeouts } from './limits.js';
import { lazyChildLogger, serviceLogger, type LoggerOption } from './request-logger.js';
import { KnownPaths, registerBulkPathRefusal } from './method-not-allowed.js';
import { answerClientError, guardRequests, ignoreUnknownExpectations, markStopping, WIRE_SERVER_OPTIONS, type Front } from './wire-errors.js';
import { registerMetricsRoute } from './metrics.js';
import type { Metrics } from '../metrics/index.js';
import { RenderCache, RenderPool } from '../render/index.js';
import { mediaLookupOptions, type RenderGate } from './ping-budget.js';
import { FastStatus } from './fast-status.js';
import {
  MemoryRateLimitStore,
  RedisRateLimitStore,
  registerRateLimit,
  tierCharger,
  tierConfig,
  tierHook,
  type RateLimitOptions,
} from './rate-limit.js';
import { recordStep, requestRecorder } from './request-record.js';
import { RequestSteps, registerRequestSteps, type RequestStep } from './request-steps.js';
import { registerTracing, traceStep, tracedHandler } from './tracing.js';
import { NO_TRACER, type Tracer } from '../core/tracing.js';
import { StatusAnswers } from './status-answer.js';
import type { SharedRedis } from '../redis/shared-redis.js';
import type { StatusLookup } from '../status/types.js';
import type { Store } from '../store/types.js';
import { healthAnswer, healthBody, healthRoutes, type DependencyHealth, type HealthAnswer } from './routes/health.js';
import { historyRoutes } from './routes/history.js';
import { imageRoutes } from './routes/images.js';
import { badgeRoutes } from './routes/badges.js';
import { statusRoutes } from './routes/status.js';
import { widgetRoutes } from './routes/widget.js';
import { ServerHistory, uptimeRoutes } from './routes/uptime.js';
import { pageRoutes } from './routes/pages.js';
import { bulkRoutes } from './routes/bulk.js';
import { watchRoutes } from './routes/watches.js';
import { probeRoutes } from './routes/probe.js';
import { registerVotesOff, voteRoutes } from './routes/vote.js';
import type { VoteService } from '../vote/service.js';
import type { WatchService } from '../watch/index.js';
import { BulkError, BulkResponse, EditionsStatus, ErrorCode, ErrorResponse, HealthResponse, Motd, QueryErrorCode, QueryResult, ServerStatus, VoteAnswer } from './schemas.js';
import { ApiErrorCodeSchema, contractDocument } from './contract.js';
import { sharedSerializers } from './serializers.js';

export const API_PREFIX = '/api/v1';
/** Requests slower than this are logged as warnings by default (AppDeps.slowRequestMs). */
const SLOW_REQUEST_MS = 1000;

/** A bind address only this machine can reach. */
function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  return ipaddr.isValid(host) && ipaddr.process(host).range() === 'loopback';
}

export interface AppDeps {
  config: Config;
  clock?: Clock;
  /** pino logger options; false silences logging (tests). */
  logger?: LoggerOption;
  /** The log to write into (compose.ts makes it first); else one made from `logger`. */
  log?: FastifyBaseLogger | null;
  /** Shared Redis (with its breaker) for rate limits when REDIS_URL is set. */
  redis?: SharedRedis | null;
  /** Extra health fields: database, Redis and write-buffer state. */
  health?: () => DependencyHealth;
  /** Client hasher shared with the status service (distinct-client counts). */
  hasher?: ClientHasher;
  /** The status service; without it the status, image and widget routes are not served. */
  status?: StatusLookup;
  /** History store; without it /trends and /stats are not served and nothing is counted. */
  store?: Store;
  /**
   * Resolves once the check a look-up of this server is recording (if any) is queued: /history
   * waits for it. Without a server: once what every look-up answered so far records is queued
   * (a first page of /trends waits for it).
   */
  recorded?: (serverId?: string) => Promise<void>;
  /** Requests slower than this are logged as warnings whatever LOG_REQUESTS says (default 1000). */
  slowRequestMs?: number;
  /**
   * The built web front (`dist/web`, from `web/build.mjs`); default: the repository's. The
   * pages are not served when it has not been built.
   */
  webDir?: string;
  /** Prometheus metrics: every answered request is observed; GET /metrics with METRICS_TOKEN. */
  metrics?: Metrics;
  /** Watches (docs/watches.md); without it /watches is not served. */
  watches?: WatchService;
  /** Test votes (docs/votes.md); without it, or with VOTES_ENABLED=false, /vote is not served. */
  votes?: VoteService;
  /** Steps every request goes through after the application's own (request-steps.ts). */
  requestSteps?: readonly RequestStep[];
  /** Traces (src/core/tracing.ts); none without it. */
  tracer?: Tracer;
}


export async function buildApp(deps: AppDeps) {
  const { config } = deps;
  const clock = deps.clock ?? systemClock;
  const hasher = deps.hasher ?? new ClientHasher(clock);
  // Requests the front answers never reach Fastify (see fast-status.ts).
  const front: Front = { fast: null, stopping: false };
  const log = deps.log !== undefined ? deps.log : serviceLogger(config.logLevel, deps.logger);
  const logRequests = requestLinesLogged(config, log);
  const steps = requestSteps(deps, log !== null, logRequests);
  const health = healthAnswer(healthBody(clock, deps.health), steps.headerPairs);
  const app = createServer(deps, front, log);
  markStopping(app, front);
  warnOnOpenTrustProxy(app, config);
  const tracer = deps.tracer ?? NO_TRACER;
  registerTracing(app, tracer);

  registerBasics(app, steps);
  const paths = KnownPaths.of(app);
  const rateLimits = registerLimits(app, deps, hasher, clock, paths);
  const admission = registerAdmission(app, config, deps.metrics);
  const renders = registerRenderPool(app, config, tracer);
  const admitPing = () => admission.admitPing();
  const renderGate: RenderGate = (request, work) => admission.render(clientKeyOf(request, hasher), work);
  // Pings caused by image and widget requests draw on the status tier (http/ping-budget.ts).
  // Image and widget look-ups count the client too, like the status route's.
  const lookupOptions = mediaLookupOptions(tierCharger(rateLimits), hasher, admitPing);

  await registerDocs(app, config);
  if (deps.metrics && config.metricsToken !== null) registerMetricsRoute(app, { metrics: deps.metrics, token: config.metricsToken });
  const answers = deps.status ? statusAnswers(app, config, { status: deps.status, hasher, rateLimits, admitPing, headers: steps.headerPairs }) : null;
  if (answers && !logRequests) openFront(app, front, { answers, health, steps });

  await app.register(
    async (api) => {
      await api.register(healthRoutes, { answer: health });
      if (deps.status && answers) {
        await api.register(statusRoutes, { answers, config });
        await api.register(bulkRoutes, { status: deps.status, config, hasher, admitPing });
        registerBulkPathRefusal(api, paths, tierConfig('general'));
        const renderCache = new RenderCache({ maxBytes: cacheBudget(config.cacheMemoryMb).renders });
        await api.register(imageRoutes, { status: deps.status, config, lookupOptions, renderGate, renders, cache: renderCache });
        await api.register(badgeRoutes, { status: deps.status, config, lookupOptions, renders });
        await api.register(widgetRoutes, { status: deps.status, config, lookupOptions, renderGate, tracer });
      }
      if (deps.store) {
        const recorded = deps.recorded ?? (async () => {});
        await api.register(historyRoutes, { store: deps.store, config, recorded });
        await api.register(uptimeRoutes, { store: deps.store, config, recorded });
      }
      if (deps.votes && config.votesEnabled) {
        await api.register(voteRoutes, { votes: deps.votes, admitPing, now: () => clock.now(), deadlineMs: config.pingTimeoutMs });
      } else {
        registerVotesOff(api);
      }
      if (deps.watches) await api.register(watchRoutes, { watches: deps.watches, ...(deps.store ? { migrating: () => deps.store!.migration() !== null } : {}) });
      api.get('/openapi.json', { schema: { hide: true }, config: tierConfig('general') }, async () => app.swagger());
    },
    { prefix: API_PREFIX },
  );

  if (deps.status && config.probeEnabled) await app.register(probeRoutes, { status: deps.status, config, hasher, admitPing, apiPrefix: API_PREFIX });
  // The web front: /, /server/{address}, /assets/*, /favicon.ico (outside the API prefix).
  await app.register(pageRoutes, { config, renders, ...(deps.webDir ? { webDir: deps.webDir } : {}) });

  return app;
}

/** The error shape, shared schemas, the request steps and boolean flags: what every route meets. */
function registerBasics(app: App, steps: RequestSteps): void {
  // First, so that every plugin context below inherits the one error shape.
  registerErrorHandling(app);
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
  registerRequestSteps(app, steps);
  registerParameterGrammar(app);
}

/**
 * What every request goes through, whichever entrance answers it (request-steps.ts): CORS
 * headers, the maintenance gate, the refusal of an unexpected body, the request's record,
 * then the steps the caller adds.
 */
function requestSteps(deps: AppDeps, logging: boolean, logRequests: boolean): RequestSteps {
  const { config } = deps;
  const record = requestRecorder({
    prefix: API_PREFIX,
    store: deps.store,
    metrics: deps.metrics,
    logging,
    logRequests,
    slowRequestMs: deps.slowRequestMs ?? SLOW_REQUEST_MS,
  });
  return new RequestSteps([
    // First: a step that refuses the request stops the ones after it.
    ...(deps.tracer?.enabled ? [traceStep(deps.tracer)] : []),
    corsStep,
    ...(config.maintenanceMode ? [maintenanceStep(config)] : []),
    bodyRefusalStep,
    ...(record ? [recordStep(record)] : []),
    ...(deps.requestSteps ?? []),
  ]);
}

/**
 * The per-client rate limits, their store (Redis's when shared), and the requests that are
 * charged without a route of their own: unknown paths and wrong methods (general tier).
 */
function registerLimits(app: App, deps: AppDeps, hasher: ClientHasher, clock: Clock, paths: KnownPaths): RateLimitOptions {
  const windows = cacheBudget(deps.config.cacheMemoryMb).clientWindows;
  const rateLimits: RateLimitOptions = {
    limits: deps.config.rateLimits,
    hasher,
    store: deps.redis
      ? new RedisRateLimitStore(deps.redis, undefined, () => clock.now(), { maxBytes: windows })
      : new MemoryRateLimitStore(() => clock.now(), { maxBytes: windows }),
    onError: (error: unknown) => app.log.warn({ err: error }, 'rate limit store failed; request let through'),
  };
  registerRateLimit(app, rateLimits);
  registerPreflight(app);
  registerNotFound(app, tierHook(rateLimits, 'general'), (path) => paths.allowed(path));
  return rateLimits;
}

/** Admission of renders and pings against the service's load (http/admission.ts), released on close. */
function registerAdmission(app: App, config: Config, metrics: Metrics | undefined): Admission {
  const admission = new Admission(config.admission, {
    refused: metrics ? ({ work, reason }) => metrics.observeShed(work, reason) : undefined,
    // One line per episode, not per refusal: every refusal is counted in observer_shed_total.
    began: ({ work, reason }) =>
      app.log.warn({ work, reason }, 'shedding load: new renders and pings are refused with 503 overloaded until the service catches up'),
  });
  app.addHook('onClose', (_instance, done) => {
    admission.close();
    done();
  });
  return admission;
}

/** The worker threads images are drawn in (render/pool.ts), ended on close. */
function registerRenderPool(app: App, config: Config, tracer: Tracer): RenderPool {
  const renders = new RenderPool({ threads: config.renderThreads, tracer });
  app.addHook('onClose', () => renders.close());
  return renders;
}

/** Schemas referenced by `$ref` from more than one route. */
const SHARED_SCHEMAS = [ApiErrorCodeSchema, ErrorResponse, HealthResponse, ErrorCode, QueryErrorCode, Motd, QueryResult, ServerStatus, EditionsStatus, ServerHistory, BulkError, BulkResponse, VoteAnswer];

/**
 * Whose X-Forwarded-For is believed, as Fastify's `trustProxy`. `true`: one proxy hop, the
 * client is the X-Forwarded-For entry the proxy appended, not a value the client could have put
 * there itself. A CIDR list: only those peers' forwarded addresses are believed (proxy-addr walks
 * the chain from the right, past trusted hops).
 */
function trustProxyOf(config: Config): TrustProxy {
  if (config.trustProxy === false) return false;
  return config.trustProxy === true ? (_address: string, hop: number) => hop < 1 : [...config.trustProxy];
}

/** Whether a peer is a proxy whose X-Forwarded-For is believed: its connections carry many clients. */
function trustedPeer(config: Config): (address: string) => boolean {
  const trust = trustProxyOf(config);
  if (trust === false) return () => false;
  if (typeof trust === 'function') return () => true;
  const ranges = trust.map((cidr) => ipaddr.parseCIDR(cidr));
  return (address) => {
    if (!ipaddr.isValid(address)) return false;
    const ip = ipaddr.process(address);
    return ranges.some(([range, bits]) => range.kind() === ip.kind() && ip.match(range, bits));
  };
}

/** Fastify with our logging, proxy trust, validation and routing options; nothing registered. */
function createServer(deps: AppDeps, front: Front, log: FastifyBaseLogger | null) {
  const { config } = deps;
  return Fastify({
    ...(log ? { loggerInstance: log } : { logger: false }),
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyChildLogger,
    trustProxy: trustProxyOf(config),
    // `x-examples`: named examples a schema gives the OpenAPI document (@fastify/swagger moves them to the media type).
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, keywords: ['x-examples'] } },
    schemaController: { compilersFactory: { buildSerializer: sharedSerializers() } },
    bodyLimit: config.http.bodyLimitBytes,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1000 },
    // A URL the router refuses (malformed percent-encoding, an over-long parameter) is answered
    // in the one error shape too, not in Fastify's own.
    frameworkErrors: answerFrameworkError,
    // What Node and Fastify would answer in their own shapes, in ours (wire-errors.ts).
    clientErrorHandler: answerClientError,
    return503OnClosing: false,
    // Fastify's own HTTP/1 server, with the front (fast-status.ts) before its handler.
    serverFactory: (handler, fastifyOptions) => {
      const options = fastifyOptions as { connectionTimeout?: number };
      const answer = guardRequests((req, res) => (front.fast === null || !front.fast.handle(req, res)) && handler(req, res), front);
      // Within the request's span when traces are on (tracing.ts).
      const server = createHttpServer({ ...serverTimeouts(config), ...WIRE_SERVER_OPTIONS }, tracedHandler(deps.tracer ?? NO_TRACER, answer));
      ignoreUnknownExpectations(server, answer);
      server.keepAliveTimeout = config.http.keepAliveTimeoutMs;
      server.setTimeout(options.connectionTimeout ?? 0);
      limitConnectionsPerClient(server, config.http.maxConnectionsPerClient, trustedPeer(config));
      return server;
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
}

/** The one writer of status answers, for the route and the front alike (status-answer.ts). */
function statusAnswers(
  app: App,
  config: Config,
  parts: { status: StatusLookup; hasher: ClientHasher; rateLimits: RateLimitOptions; admitPing: () => void; headers: readonly string[] },
) {
  const { status, hasher, rateLimits, admitPing, headers } = parts;
  return new StatusAnswers({
    headers,
    status,
    hasher,
    clientAddress: clientAddress(trustProxyOf(config)),
    rateLimit: { store: rateLimits.store, limit: rateLimits.limits.status, onError: rateLimits.onError! },
    admitPing,
    onError: (error) => app.log.error({ err: error }, error instanceof ObserverError ? 'request failed' : 'unexpected error'),
  });
}

/**
 * The front (fast-status.ts) in front of Fastify's handler, which buildApp leaves out when every
 * request gets an access line: it opens when the application is ready. Once closing, every request goes to
 * Fastify, which answers 503 on kept-alive connections.
 */
function openFront(app: App, front: Front, parts: { answers: StatusAnswers; health: HealthAnswer; steps: RequestSteps }) {
  app.addHook('onReady', (done) => {
    front.fast = new FastStatus({ ...parts, prefix: API_PREFIX, log: app.log, onError: (error) => app.log.error({ err: error }, 'unexpected error') });
    done();
  });
  app.addHook('preClose', (done) => {
    front.fast = null;
    done();
  });
}

type App = ReturnType<typeof createServer>;

function warnOnOpenTrustProxy(app: App, config: Config): void {
  if (config.trustProxy === true && !isLoopbackHost(config.host)) {
    app.log.warn(
      `TRUST_PROXY=true believes X-Forwarded-For from any peer, and HOST=${config.host} is reachable beyond this machine: ` +
        'any client can choose its own rate-limit key. Set TRUST_PROXY to the CIDRs of your proxies (e.g. 10.0.0.5/32).',
    );
  }
}

/** MAINTENANCE_MODE: everything but health (and the operator's /metrics) answers 503. */
function maintenanceStep(config: Config): RequestStep {
  return {
    name: 'maintenance gate',
    before(request) {
      if (request.method === 'OPTIONS') return undefined;
      const { path } = request;
      if (path === `${API_PREFIX}/status` || path === `${API_PREFIX}/status/`) return undefined;
      // Operators keep watching during maintenance (the route still needs its token).
      if (path === '/metrics' && config.metricsToken !== null) return undefined;
      return new ObserverError('maintenance', 503, 'The service is down for maintenance. Please retry later.', {
        headers: { 'Retry-After': '300' },
      });
    },
  };
}

/** The groups of operations, in the order the document lists them. */
const TAGS = [
  { name: 'health', description: 'Whether the instance answers: for uptime monitors.' },
  { name: 'status', description: 'Server status as JSON, one server or many.' },
  { name: 'images', description: 'Icons, banners and badges drawn from a server\'s status.' },
  { name: 'widget', description: 'The embeddable HTML widget and its fonts.' },
  { name: 'trends', description: 'Online servers, most popular first.' },
  { name: 'stats', description: 'Platform statistics.' },
  { name: 'history', description: 'A server\'s uptime and players over time.' },
  { name: 'watches', description: 'Webhook deliveries when a server goes down or comes back.' },
  { name: 'votes', description: 'Test votes to a server\'s Votifier or NuVotifier, for its owner.' },
];

/** The OpenAPI 3.1 document and the Swagger UI at /docs, served without any CDN. */
async function registerDocs(app: App, config: Config): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Observer',
        version: '1.0.0',
        description:
          'Keyless Minecraft server status API: Java, legacy Java and Bedrock status as JSON, ' +
          'icons, banners and embeddable widgets. Every error body is ' +
          '`{"status":"error","error":"<code>","message":"<sentence>"}`. 429 responses carry ' +
          '`Retry-After`, `RateLimit-Policy` and `RateLimit` headers. A path asked with a method it is not served with ' +
          'answers 405 `method_not_allowed` with `Allow`.',
        license: { name: 'MIT', identifier: 'MIT' },
        contact: { name: 'The operator of this Observer instance', ...(config.publicUrl ? { url: config.publicUrl } : {}) },
      },
      tags: TAGS,
      // Where the API lives on this instance: every path below is relative to it.
      servers: [{ url: API_PREFIX, description: 'This Observer instance' }],
      // A watch's management token (docs/watches.md).
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } } },
    },
    exposeHeadRoutes: true,
    transformObject: (documents) => contractDocument((documents as { openapiObject: object }).openapiObject),
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // Everything the page needs is served by this service: no CDN, no validator badge.
    uiConfig: { validatorUrl: null, deepLinking: true },
    staticCSP: true,
  });
}

/** Whether every request gets an access line (LOG_REQUESTS at a level that shows it). */
function requestLinesLogged(config: Config, log: FastifyBaseLogger | null): boolean {
  return log !== null && config.logRequests && ['trace', 'debug', 'info'].includes(log.level);
}

export { SERVICE_NAME, SERVICE_VERSION };
