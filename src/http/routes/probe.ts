import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Config } from '../../config/index.js';
import type { ClientHasher } from '../../core/client-hash.js';
import { probeDeadlineMs, probeServer } from '../../metrics/probe.js';
import { CONTENT_TYPES, expositionFormat, OFFLINE_REASONS, probeExposition } from '../../metrics/probe-text.js';
import type { StatusLookup } from '../../status/types.js';
import { lookupKeyOf } from '../client-key.js';
import { errorResponses, headers } from '../contract.js';
import { tierConfig } from '../rate-limit.js';
import { readParameter } from '../parameter-grammar.js';
import { AddressParameter, BooleanFlag } from '../schemas.js';
import { queryRequest, statusLookupOptions } from '../status-answer.js';

export interface ProbeRouteOptions {
  status: StatusLookup;
  config: Config;
  hasher: ClientHasher;
  admitPing: () => void;
  /** The API's prefix: the route is served there too, as the OpenAPI document lists it. */
  apiPrefix: string;
}

const DESCRIPTION =
  'One server\'s status as Prometheus series, for the multi-target exporter pattern: Prometheus scrapes ' +
  '`/probe?target=<address>` once per server, the targets set by relabelling (docs/monitoring.md). Served at `/probe` ' +
  'and at `/api/v1/probe`. The answer is the text exposition format 0.0.4, or OpenMetrics 1.0 when `Accept` asks for ' +
  '`application/openmetrics-text`. Series: `probe_success`, `probe_duration_seconds`, and with an `edition` label ' +
  '`minecraft_players_online`, `minecraft_players_max`, `minecraft_latency_seconds`, `minecraft_version_info{name,protocol}`, ' +
  '`minecraft_icmp_reachable`, `minecraft_offline_reason{reason}` (one of ' +
  OFFLINE_REASONS.map((reason) => `\`${reason}\``).join(', ') +
  '), `minecraft_cached`, `minecraft_stale` and, with `query=true`, `minecraft_query_success`. ' +
  'The look-up is the status route\'s: same cache, guard, per-target budget and status rate limit. A server that does not ' +
  'answer, a name without DNS records included, is a 200 with `probe_success 0`; an address Observer refuses is a 400, as on ' +
  'the status route. `X-Prometheus-Scrape-Timeout-Seconds` (seconds in decimal digits, such as `10` or `9.5`) shortens the ' +
  'wait to the scrape timeout less 0.5 s (at least 0.5 s, at most PING_TIMEOUT_MS): a look-up not done by then is answered ' +
  'as `timeout`, and its result serves the next scrape; another form of the header is ignored. ' +
  '`PROBE_ENABLED=false` turns the route off (404).';

/**
 * The scrape timeout Prometheus sends, in the grammar of the API's numbers (decimal digits, an
 * optional fraction: parameter-grammar.ts); undefined when absent, repeated or in another form.
 */
function scrapeTimeoutSeconds(header: string | string[] | undefined): number | undefined {
  const value = typeof header === 'string' ? readParameter('number', header) : undefined;
  return typeof value === 'number' ? value : undefined;
}

/** GET /probe: Prometheus text for one server (the multi-target exporter pattern). */
export const probeRoutes: FastifyPluginAsyncTypebox<ProbeRouteOptions> = async (app, { status, config, hasher, admitPing, apiPrefix }) => {
  const schema = {
    operationId: 'probeServer',
    summary: 'Server status as Prometheus series',
    description: DESCRIPTION,
    tags: ['status'],
    security: [],
    querystring: Type.Object({
      target: { ...AddressParameter, description: 'The server: host, host:port, IPv4, [IPv6]:port or IPv6, as the status route takes it.' },
      edition: Type.Enum(['java', 'bedrock', 'auto'], {
        default: 'java',
        description: '`java` (the default), `bedrock`, or `auto`: both editions at once, each series labelled with its `edition`.',
      }),
      query: BooleanFlag('Also run a Query (GS4 full stat, UDP) beside the ping: adds `minecraft_query_success`.'),
      queryPort: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'UDP port of the Query; default: the game port. Only with `query=true`.' })),
    }),
    response: {
      200: {
        description: 'The series, as text 0.0.4 (`text/plain; version=0.0.4`) or OpenMetrics 1.0 (ending with `# EOF`).',
        headers: headers('Cache-Control!', 'RateLimit-Policy', 'RateLimit'),
        content: {
          'text/plain': { schema: Type.String({ examples: ['# HELP probe_success …\n# TYPE probe_success gauge\nprobe_success 1\n'] }) },
          'application/openmetrics-text': { schema: Type.String() },
        },
      },
      ...errorResponses({ 400: ['invalid_address', 'invalid_parameter', 'target_refused'], 429: ['rate_limited', 'target_rate_limited'], 503: ['service_busy', 'overloaded'] }, { limited: true }),
    },
  };
  // At the root, where Prometheus configurations name it, and under the prefix, where the
  // document (whose server is the prefix) lists it.
  for (const url of [`${apiPrefix}/probe`, '/probe']) {
    app.get(url, { config: tierConfig('status'), schema: { ...schema, hide: url === '/probe' } }, async (request, reply) => {
      const started = performance.now();
      const { target, edition, query, queryPort } = request.query;
      const format = expositionFormat(request.headers.accept);
      const options = statusLookupOptions(lookupKeyOf(request, hasher), admitPing, queryRequest(query, queryPort));
      const deadline = probeDeadlineMs(scrapeTimeoutSeconds(request.headers['x-prometheus-scrape-timeout-seconds']), config.pingTimeoutMs);
      const editions = await probeServer(status, target, edition, options, deadline);
      reply.header('Cache-Control', 'no-store').type(CONTENT_TYPES[format]);
      return probeExposition({ editions, durationSeconds: (performance.now() - started) / 1000 }, format);
    });
  }
};
