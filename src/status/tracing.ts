/**
 * A look-up in traces (docs/monitoring.md, "Traces"): `status.lookup`, and within it the steps
 * the service takes, each the span of the dependency that does it:
 *
 *   status.lookup
 *     status.cache.get            (status.cache.claim with a shared cache)
 *     status.resolve              DNS and SRV
 *       status.guard              the public-address check of the answers
 *     status.ping                 java, legacy or bedrock
 *       status.connect            TCP connect, or the UDP socket
 *     status.query                the Query (GS4), when asked
 *       status.connect
 *     status.icmp
 *     status.cache.set
 *     history.record              the check queued for the history store (src/store)
 *
 * The service itself is not changed: its dependencies are wrapped, and its two entrances
 * (lookup, cached) are. Only built when traces are on (createStatusService).
 */
import type { AbortLike } from '../core/deadline.js';
import type { Tracer, TraceSpan } from '../core/tracing.js';
import type { QueryMode } from '../core/types.js';
import type { ProbeOptions, ProbeTarget } from '../protocol/target.js';
import type { Endpoint } from '../protocol/transport.js';
import type { CacheEntry, StatusCache } from './cache.js';
import { StatusService, type StatusServiceDeps } from './service.js';
import type { LookupOptions, StatusAnswer } from './types.js';

/** What a look-up's span says of its answer: the server asked, how it was answered, whether it is online. */
function describe(span: TraceSpan, mode: QueryMode, answer: StatusAnswer): void {
  const { status } = answer;
  span.set('minecraft.protocol', mode);
  span.set('server.address', status.query.host);
  span.set('server.port', status.query.port);
  span.set('observer.cache', answer.cache);
  span.set('minecraft.online', status.online);
  if (status.error_code) span.set('minecraft.error_code', status.error_code);
}

/** The status service with a span per look-up, over dependencies that each have theirs. */
export class TracedStatusService extends StatusService {
  constructor(
    deps: StatusServiceDeps,
    private readonly tracer: Tracer,
  ) {
    super(tracedDeps(deps, tracer));
  }

  override lookup(address: string, mode: QueryMode, options: LookupOptions = {}): Promise<StatusAnswer> {
    return this.tracer.span('status.lookup', async (span) => {
      const answer = await super.lookup(address, mode, options);
      describe(span, mode, answer);
      return answer;
    });
  }

  /** An answer from memory is a look-up too; when there is none, lookup() follows with its own span. */
  override cached(address: string, mode: QueryMode, options: LookupOptions = {}): StatusAnswer | undefined {
    const span = this.tracer.start('status.lookup');
    const answer = super.cached(address, mode, options);
    if (answer !== undefined) {
      describe(span, mode, answer);
      span.end();
    }
    return answer;
  }
}

function tracedDeps(deps: StatusServiceDeps, tracer: Tracer): StatusServiceDeps {
  const { resolver, icmp, queryServer } = deps;
  return {
    ...deps,
    resolver: {
      resolve: (address, mode, signal) =>
        tracer.span(
          'status.resolve',
          async (span) => {
            span.set('server.address', address.host);
            const target = await resolver.resolve(address, mode, signal);
            span.set('observer.resolve.addresses', target.ips.length);
            span.set('observer.resolve.srv', target.srvRecord !== null);
            return target;
          },
          { kind: 'client' },
        ),
    },
    ping: {
      java: tracedProbe(tracer, 'status.ping', 'java', (target) => deps.ping.java(target)),
      legacy: tracedProbe(tracer, 'status.ping', 'legacy', (target) => deps.ping.legacy(target)),
      bedrock: tracedProbe(tracer, 'status.ping', 'bedrock', (target) => deps.ping.bedrock(target)),
    },
    ...(queryServer ? { queryServer: tracedProbe(tracer, 'status.query', 'query', queryServer) } : {}),
    ...(icmp ? { icmp: tracedEcho(tracer, icmp) } : {}),
    cache: tracedCache(deps.cache, tracer),
  };
}

function peer(span: TraceSpan, ip: string, port?: number): void {
  span.set('network.peer.address', ip);
  if (port !== undefined) span.set('network.peer.port', port);
}

/** A ping or a Query in its span, the target's address and the protocol on it. */
function tracedProbe<T>(tracer: Tracer, name: string, protocol: string, probe: (target: ProbeTarget) => Promise<T>) {
  return (target: ProbeTarget) =>
    tracer.span(
      name,
      (span) => {
        span.set('minecraft.protocol', protocol);
        span.set('server.address', target.hostname);
        peer(span, target.ip, target.port);
        return probe(target);
      },
      { kind: 'client' },
    );
}

function tracedEcho(tracer: Tracer, echo: (ip: string, signal: AbortLike) => Promise<boolean | null>) {
  return (ip: string, signal: AbortLike) =>
    tracer.span(
      'status.icmp',
      async (span) => {
        peer(span, ip);
        const reachable = await echo(ip, signal);
        span.set('observer.icmp.reachable', reachable === null ? 'unknown' : String(reachable));
        return reachable;
      },
      { kind: 'client' },
    );
}

/**
 * The protocol clients' connectors in a `status.connect` span each (the seam ProbeOptions
 * gives), for createStatusService to hand the clients.
 */
export function tracedConnectors(tracer: Tracer, connectors: Required<Pick<ProbeOptions, 'connectTcp' | 'connectUdp'>>): ProbeOptions {
  const traced = <C>(transport: string, connect: (endpoint: Endpoint) => Promise<C>) => (endpoint: Endpoint) =>
    tracer.span(
      'status.connect',
      (span) => {
        span.set('network.transport', transport);
        peer(span, endpoint.ip, endpoint.port);
        return connect(endpoint);
      },
      { kind: 'client' },
    );
  return { connectTcp: traced('tcp', connectors.connectTcp), connectUdp: traced('udp', connectors.connectUdp) };
}

/** The cache's reads and writes in spans; `peek` (memory, at once) stays as it is. */
function tracedCache(cache: StatusCache, tracer: Tracer): StatusCache {
  const found = (span: TraceSpan, entry: CacheEntry | undefined) => span.set('observer.cache.found', entry !== undefined);
  const traced: StatusCache = {
    get: (key, options) =>
      tracer.span('status.cache.get', async (span) => {
        const entry = await cache.get(key, options);
        found(span, entry);
        return entry;
      }),
    set: (key, entry, ttlMs, release) => tracer.span('status.cache.set', () => cache.set(key, entry, ttlMs, release)),
    close: () => cache.close(),
  };
  if (cache.peek) traced.peek = (key) => cache.peek!(key);
  if (cache.claim) {
    traced.claim = (key, ttlMs) =>
      tracer.span('status.cache.claim', async (span) => {
        const claim = await cache.claim!(key, ttlMs);
        span.set('observer.cache.claimed', claim.token !== null);
        found(span, claim.entry);
        return claim;
      });
  }
  if (cache.release) traced.release = (key, token) => cache.release!(key, token);
  return traced;
}
