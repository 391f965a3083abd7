/**
 * Test votes (docs/votes.md): the host is resolved and every address checked by the targets'
 * guard (TARGET_ALLOWLIST), the port by the rule below, the first address draws on its IP's ping
 * budget (TARGET_PINGS_PER_MINUTE, shared with look-ups), and the Votifier client
 * (protocol/votifier.ts) runs on a connection to the checked IP, all within one deadline
 * (PING_TIMEOUT_MS).
 *
 * No port scanner: on a public address the port must be 1024–65535 (an allow-listed address may
 * use any), and a connection that could not be made, whether refused, unreachable or never
 * answered (a filtered port), is answered alike, `connection_refused`, and only once the
 * deadline has passed: no answer tells a closed port from a filtered one.
 *
 * Nothing is kept: the secret and the username live as long as the vote, in no log or span.
 */
import type { Config } from '../config/index.js';
import { BadRequestError, ProbeError, TargetRefusedError, type VoteFailure } from '../core/errors.js';
import { Deadline, type AbortLike } from '../core/deadline.js';
import type { QueryMode } from '../core/types.js';
import {
  connectTcp as defaultConnectTcp,
  exchangeVote,
  parsePublicKey,
  VoteKeyError,
  type ServerAnswer,
  type StreamConnection,
  type TcpConnector,
  type Vote,
  type VoteExchange,
  type VoteSecret,
} from '../protocol/index.js';
import { MAX_ANSWER_BYTES, MAX_GREETING_BYTES } from '../protocol/votifier.js';
import type { WindowCounter } from '../core/rate-window.js';
import { AddressGuard, parseAddress, TargetResolver, type ParsedAddress, type ResolvedTarget } from '../resolve/index.js';
import { TargetBudget } from '../status/budgets.js';

/** What a vote request leaves out: Votifier's default port, the service and voter's address a test vote gives. */
export const VOTE_DEFAULTS = { port: 8192, service: 'Observer', address: '127.0.0.1' } as const;
/** The lowest port a vote may go to on a public address: below it are system services, never a Votifier. */
export const MIN_PUBLIC_VOTE_PORT = 1024;

export interface VoteRequest {
  host: string;
  port: number;
  vote: Vote;
  /** NuVotifier's token (v2); exactly one of it and `publicKey`. */
  token?: string | undefined;
  /** Votifier's public key (v1): PEM, or the base64 of `public.key`. */
  publicKey?: string | undefined;
}

/** The answer of POST /vote (decisions: `sent, version, latency_ms, error_code, error, server_status`). */
export interface VoteAnswer {
  sent: boolean;
  version: 1 | 2 | null;
  latency_ms: number | null;
  error_code: VoteFailure | null;
  error: string | null;
  server_status: ServerAnswer | null;
}

export interface VoteServiceDeps {
  resolver: { resolve(address: ParsedAddress, mode: QueryMode, signal: AbortLike): Promise<ResolvedTarget> };
  guard: { isAllowlisted(ip: string): boolean };
  /** Pings per target IP a minute; without it, target IPs are not limited. */
  budget?: TargetBudget;
  deadlineMs: number;
  connectTcp?: TcpConnector;
  /** Monotonic milliseconds; default performance.now. */
  now?: () => number;
}

const QUERY_DEADLINE = new Error('vote deadline reached');
/** Connection failures worth trying the next address for (as a look-up does). */
const TRY_NEXT_ADDRESS = new Set(['connection_refused', 'unreachable']);

const NO_CONNECTION =
  'No connection could be made to this address and port before the deadline: nothing listens there, a firewall drops ' +
  'the connection, or the host cannot be reached (Observer does not tell these apart).';

/** The secret of a request: exactly one, and a key that is a Votifier key. A key that is not: a VoteKeyError. */
function secretOf(request: VoteRequest): VoteSecret {
  if ((request.token === undefined) === (request.publicKey === undefined)) {
    throw new BadRequestError('invalid_parameter', 'Give exactly one of token (NuVotifier, v2) or public_key (Votifier, v1).');
  }
  return request.token !== undefined ? { kind: 'token', token: request.token } : { kind: 'key', key: parsePublicKey(request.publicKey!) };
}

function answerOf(exchange: VoteExchange): VoteAnswer {
  return {
    sent: exchange.failure === null,
    version: exchange.version,
    latency_ms: exchange.latencyMs,
    error_code: exchange.failure,
    error: exchange.detail,
    server_status: exchange.serverStatus,
  };
}

function failed(error_code: VoteFailure, error: string): VoteAnswer {
  return { sent: false, version: null, latency_ms: null, error_code, error, server_status: null };
}

/** Resolves once `signal` has aborted. */
function untilAborted(signal: AbortLike): Promise<void> {
  return new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
}

export class VoteService {
  private readonly connectTcp: TcpConnector;
  private readonly now: () => number;

  constructor(private readonly deps: VoteServiceDeps) {
    this.connectTcp = deps.connectTcp ?? defaultConnectTcp;
    this.now = deps.now ?? (() => performance.now());
  }

  /**
   * Sends one vote. Rejects with the request's 4xx (a malformed host, both or neither secret, a
   * refused target, a name without records, a spent target budget) before anything is sent;
   * `beforeSend` may refuse too (admission, 503). Every other end is an answer.
   */
  async send(request: VoteRequest, beforeSend: () => void = () => {}): Promise<VoteAnswer> {
    const parsed = parseAddress(request.host);
    if (parsed.port !== null) throw new BadRequestError('invalid_address', 'Give the host without a port: the port goes in `port`.');
    let secret: VoteSecret;
    try {
      secret = secretOf(request);
    } catch (error) {
      if (error instanceof VoteKeyError) return failed('bad_key', error.message);
      throw error;
    }
    const deadline = new Deadline();
    const timer = setTimeout(() => deadline.abort(QUERY_DEADLINE), this.deps.deadlineMs);
    try {
      const ips = await this.checkedAddresses({ ...parsed, port: request.port }, deadline);
      if (ips === null) return await this.unconnected(deadline);
      beforeSend();
      await this.deps.budget?.take(ips[0]!);
      const connection = await this.connect(ips, request.port, deadline);
      if (connection === null) return await this.unconnected(deadline);
      try {
        return answerOf(await exchangeVote(connection, request.vote, secret, this.now));
      } finally {
        connection.close();
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** The target's addresses, checked by the guard and the port rule; null when DNS failed or timed out. */
  private async checkedAddresses(address: ParsedAddress, deadline: AbortLike): Promise<string[] | null> {
    let target: ResolvedTarget;
    try {
      // As a Bedrock look-up does: the port is given, and Votifier has no SRV record.
      target = await this.deps.resolver.resolve(address, 'bedrock', deadline);
    } catch (error) {
      if (error instanceof ProbeError) return null;
      throw error;
    }
    if (target.port < MIN_PUBLIC_VOTE_PORT && !target.ips.every((ip) => this.deps.guard.isAllowlisted(ip))) {
      throw new TargetRefusedError(`A test vote goes to a port from ${MIN_PUBLIC_VOTE_PORT} to 65535 on a public address.`);
    }
    return target.ips;
  }

  /** A connection to the first address that takes one (the next only within its budget); null when none did. */
  private async connect(ips: string[], port: number, deadline: AbortLike): Promise<StreamConnection | null> {
    for (const [index, ip] of ips.entries()) {
      if (index > 0 && (await this.deps.budget?.allows(ip)) === false) return null;
      try {
        return await this.connectTcp({ ip, port, signal: deadline, maxBytes: MAX_GREETING_BYTES + MAX_ANSWER_BYTES });
      } catch (error) {
        if (!(error instanceof ProbeError) || !TRY_NEXT_ADDRESS.has(error.code) || deadline.aborted) return null;
      }
    }
    return null;
  }

  /** No connection, whatever the reason: answered once the deadline has passed, so that every reason looks alike. */
  private async unconnected(deadline: AbortLike): Promise<VoteAnswer> {
    await untilAborted(deadline);
    return failed('connection_refused', NO_CONNECTION);
  }
}

/**
 * The vote service of an instance: its own resolver over the targets' guard, and the target
 * budget counted in `counter`, the look-ups' counter (so votes and pings share an IP's minute).
 */
export function createVoteService(
  config: Pick<Config, 'dnsServers' | 'targetAllowlist' | 'lookupMaxAddresses' | 'targetPingsPerMinute' | 'pingTimeoutMs'>,
  counter: WindowCounter,
  onError?: (error: unknown) => void,
): VoteService {
  const guard = new AddressGuard(config.targetAllowlist);
  return new VoteService({
    resolver: new TargetResolver({ dnsServers: config.dnsServers, guard, maxAddresses: config.lookupMaxAddresses }),
    guard,
    budget: new TargetBudget(counter, config.targetPingsPerMinute, onError),
    deadlineMs: config.pingTimeoutMs,
  });
}
