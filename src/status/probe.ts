/**
 * The look-up pipeline of one ping: resolve → guard (the target IP's budget) → ping the
 * addresses in order → ICMP echo and Query beside it → normalise, all within one deadline.
 * Every failure but 400/404 (and a spent target budget) is a status with `online: false`.
 */
import { ERROR_MESSAGES, HostNotFoundError, ObserverError, ProbeError, QUERY_ERROR_MESSAGES, TargetRefusedError, type ErrorCode } from '../core/errors.js';
import type { Clock } from '../core/clock.js';
import { Deadline, type AbortLike } from '../core/deadline.js';
import { settleWithin } from '../core/settle-within.js';
import { roundLatency, type ProbeTarget } from '../protocol/target.js';
import { offlineStatus, type PingResult, type QueryMode, type ServerStatus } from '../core/types.js';
import { queryEcho, type ParsedAddress, type ResolvedTarget } from '../resolve/index.js';
import type { QueryResult } from '../protocol/query.js';
import type { StoredStatus } from './cache.js';
import type { TargetBudget } from './budgets.js';
import type { QueryFailure, QueryRequest } from './types.js';

export type { ProbeTarget };

export type PingFunction = (target: ProbeTarget) => Promise<PingResult>;

export interface ProbeDeps {
  resolver: { resolve(address: ParsedAddress, mode: QueryMode, signal: AbortLike): Promise<ResolvedTarget> };
  ping: Record<QueryMode, PingFunction>;
  /** Query (GS4 full stat) over UDP, for lookups with `query`; without it they get `queryResult.error`. */
  queryServer?: (target: ProbeTarget) => Promise<QueryResult>;
  /** One ICMP echo; null when ICMP is unavailable. */
  icmp?: (ip: string, signal: AbortLike) => Promise<boolean | null>;
  clock: Clock;
  pingTimeoutMs: number;
  /** Pings per destination IP a minute; without it, target IPs are not limited. */
  targetBudget?: TargetBudget;
  /** Called with unexpected errors (a resolver's or a client's bug). */
  onError?: (error: unknown, context: string) => void;
  /** Called with each performed ping: its mode, outcome and duration. */
  observePing?: (mode: QueryMode, online: boolean, seconds: number) => void;
}

/** Why a query's leftovers (an ICMP echo, a Query) are aborted once its answer is in. */
const QUERY_DONE = new Error('query answered');
/** Why a query is aborted at PING_TIMEOUT_MS. */
const QUERY_DEADLINE = new Error('query deadline reached');

/** Errors a connection attempt may fail with where the next address is worth trying. */
const TRY_NEXT_ADDRESS = new Set(['connection_refused', 'unreachable']);

/**
 * How long the ICMP echo may still take once the Minecraft query has settled. The echo starts
 * with the query and needs one round trip where the query needs several, so a reply is nearly
 * always in by then; a host that drops ICMP must not hold every answer for the whole budget.
 */
const ICMP_GRACE_MS = 500;

/**
 * How long the Query may still take once the ping has settled: a server whose query port drops
 * packets (query disabled behind a firewall) must not hold the answer for the whole budget.
 */
const QUERY_GRACE_MS = 1_000;

export class ServerProbe {
  constructor(private readonly deps: ProbeDeps) {}

  /** Resolve, guard and ping within one deadline; every failure but 400/404 is `online: false`. */
  async probe(parsed: ParsedAddress, mode: QueryMode, id: string, query?: QueryRequest): Promise<StoredStatus> {
    // One deadline for the whole query, and one signal: it aborts at the deadline, and also ends
    // what is left (an ICMP echo) once we return. A plain timer and a Deadline rather than
    // AbortSignal.any([AbortSignal.timeout(…), …]): those keep weakly referenced signals and a
    // timer each, a measurable share of an uncached look-up's CPU.
    const done = new Deadline();
    const deadline = setTimeout(() => done.abort(QUERY_DEADLINE), this.deps.pingTimeoutMs);
    const started = performance.now();
    try {
      const stored = await this.probeWithin(parsed, mode, id, done, query);
      this.deps.observePing?.(mode, stored.status.online, (performance.now() - started) / 1000);
      return stored;
    } finally {
      clearTimeout(deadline);
      // Only an echo or a Query past their grace still listen; nothing else holds the signal
      // once we return.
      if (done.listened) done.abort(QUERY_DONE);
    }
  }

  private async probeWithin(parsed: ParsedAddress, mode: QueryMode, id: string, signal: AbortLike, query?: QueryRequest): Promise<StoredStatus> {
    const base = offlineStatus(queryEcho(parsed, mode), { server_id: id });
    let target: ResolvedTarget;
    try {
      target = await this.deps.resolver.resolve(parsed, mode, signal);
    } catch (error) {
      if (error instanceof HostNotFoundError || error instanceof TargetRefusedError) throw error;
      if (error instanceof ObserverError && error.statusCode < 500) throw error;
      const failure = this.publicError(error, 'resolving');
      if (query) base.queryResult = { ...failure };
      return this.stamp(Object.assign(base, failure));
    }
    base.query.port = target.port;
    base.srvRecord = target.srvRecord;
    base.ip_address = target.ips[0] ?? null;
    // Before anything is sent to the first address: a spent budget refuses the whole look-up
    // (answered stale, or 429).
    if (target.ips[0] !== undefined) await this.deps.targetBudget?.take(target.ips[0]);
    // The echo starts with the query, at the first address; if another address answers, it is
    // asked instead: `icmp` always describes `ip_address`.
    const echo = (ip: string | undefined) => (this.deps.icmp && ip ? this.deps.icmp(ip, signal).catch(() => null) : null);
    let icmp = echo(target.ips[0]);
    const queried = query && target.ips[0] ? this.runQuery(target.ips[0], query.port ?? target.port, target.host, signal) : null;

    const { result, failure, ip } = await this.pingFirstAnswering(target, mode, signal);
    if (result) base.ip_address = ip;
    if (result && ip !== target.ips[0]) icmp = echo(ip);
    const queryDone = queried ? settleWithin(queried, QUERY_GRACE_MS, { error: ERROR_MESSAGES.timeout, error_code: 'timeout' as const }) : null;
    base.icmp = icmp ? await settleWithin(icmp, ICMP_GRACE_MS, false) : null;
    if (queryDone) base.queryResult = await queryDone;
    if (!result) return this.stamp(Object.assign(base, this.publicError(failure, 'pinging')));
    base.online = true;
    base.version = result.version;
    base.players = result.players;
    base.motd = result.motd;
    base.favicon = result.favicon;
    base.roundTripLatency = roundLatency(result.latencyMs);
    // The protocol's own fields (mods, Bedrock's GUID, ...) never share a name with the above.
    return this.stamp(Object.assign(base, result.extra));
  }

  /**
   * Pings the target's addresses in order until one answers; the next is tried only after a
   * refusal or an unreachable host, and only within its IP's budget (the first address was
   * charged by the caller).
   */
  private async pingFirstAnswering(target: ResolvedTarget, mode: QueryMode, signal: AbortLike) {
    let failure: unknown = null;
    for (const [index, ip] of target.ips.entries()) {
      if (index > 0 && (await this.deps.targetBudget?.allows(ip)) === false) break;
      try {
        const result = await this.deps.ping[mode]({ ip, port: target.port, hostname: target.host, signal });
        return { result, failure, ip };
      } catch (error) {
        failure = error;
        if (!(error instanceof ProbeError) || !TRY_NEXT_ADDRESS.has(error.code) || signal.aborted) break;
      }
    }
    return { result: null, failure, ip: undefined };
  }

  /** The Query beside the ping, on the same deadline; a failure is `{ error, error_code }`, never thrown. */
  private runQuery(ip: string, port: number, hostname: string, signal: AbortLike): Promise<QueryResult | QueryFailure> {
    if (!this.deps.queryServer) {
      return Promise.resolve({ error: QUERY_ERROR_MESSAGES.query_unavailable, error_code: 'query_unavailable' });
    }
    return this.deps
      .queryServer({ ip, port, hostname, signal })
      .catch((error: unknown) => this.publicError(error, 'querying'));
  }

  private stamp(status: ServerStatus): StoredStatus {
    const checkedAt = this.deps.clock.now();
    status.checked_at = new Date(checkedAt).toISOString();
    return { status, checkedAt };
  }

  /** A short, safe summary and its code: the ProbeError's, never a raw exception text. */
  private publicError(error: unknown, context: string): { error: string; error_code: ErrorCode } {
    if (error instanceof ProbeError) return { error: error.message, error_code: error.code };
    this.deps.onError?.(error, context);
    return { error: ERROR_MESSAGES.internal_error, error_code: 'internal_error' };
  }
}
