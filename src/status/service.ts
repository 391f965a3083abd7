/**
 * StatusService: parse → resolve → guard → ping → normalise → cache → record.
 *
 * Caching (docs/api.md, "Caching and stale"):
 *  - a fresh result (failures too) is served for `ttlSeconds` (X-Cache: HIT);
 *  - after that, a successful result is served with `stale: true` for up to 5 more minutes
 *    while one background refresh runs (X-Cache: STALE);
 *  - when `maxConcurrentPings` pings are already in flight, the last success under 24 hours
 *    old is served stale instead of queueing; with none, the request fails fast with 503;
 *  - concurrent requests for one target share one ping (a Map of promises, deleted on settle).
 */
import { LRUCache } from 'lru-cache';
import {
  ERROR_MESSAGES,
  HostNotFoundError,
  ObserverError,
  OverloadedError,
  ProbeError,
  QUERY_ERROR_MESSAGES,
  TargetRateLimitedError,
  TargetRefusedError,
  type ErrorCode,
} from '../core/errors.js';
import type { Clock } from '../core/clock.js';
import { Deadline, type AbortLike } from '../core/deadline.js';
import { settleWithin } from '../core/settle-within.js';
import { roundLatency, type ProbeTarget } from '../protocol/target.js';
import { editionOf, offlineStatus, type PingResult, type QueryMode, type ServerStatus } from '../core/types.js';
import { defaultPort, parseAddress, type ParsedAddress, type ResolvedTarget, queryEcho } from '../resolve/index.js';
import type { CheckRecord, Store } from '../store/types.js';
import type { StatusCache, StoredStatus, CacheEntry } from './cache.js';
import { serverId } from './server-id.js';
import type { LookupOptions, QueryRequest, StatusAnswer, StatusLookup } from './types.js';
import type { QueryResult } from '../protocol/query.js';
import type { QueryFailure } from './types.js';
import type { NewServerAllowance, TargetBudget } from './budgets.js';
import { HistoryRecorder } from './recorder.js';
import { addFailure, dampingHolds, type DampingSettings, type FailureStreak } from './damping.js';

export type { ProbeTarget };

/** One ping to run: the target (cache key, address, mode, server id) and what the request asks of it. */
interface PingJob {
  key: string;
  parsed: ParsedAddress;
  mode: QueryMode;
  id: string;
  /**
   * Charged right before the ping (LookupOptions.beforePing), also for the stale-while-revalidate
   * refresh a request starts; absent for the background refresher's look-ups.
   */
  beforePing?: LookupOptions['beforePing'];
  /** The client whose look-up started the ping (absent for the background refresher's). */
  clientKey?: string;
  query?: QueryRequest;
}

export type PingFunction = (target: ProbeTarget) => Promise<PingResult>;

export interface StatusServiceDeps {
  resolver: { resolve(address: ParsedAddress, mode: QueryMode, signal: AbortLike): Promise<ResolvedTarget> };
  ping: Record<QueryMode, PingFunction>;
  /** Query (GS4 full stat) over UDP, for lookups with `query`; without it they get `queryResult.error`. */
  queryServer?: (target: ProbeTarget) => Promise<QueryResult>;
  /** One ICMP echo; null when ICMP is unavailable. */
  icmp?: (ip: string, signal: AbortLike) => Promise<boolean | null>;
  cache: StatusCache;
  store?: Store | null;
  clock: Clock;
  ttlSeconds: number;
  pingTimeoutMs: number;
  maxConcurrentPings: number;
  /** Pings per destination IP a minute; without it, target IPs are not limited. */
  targetBudget?: TargetBudget;
  /** New servers a client may have recorded a day; without it, every check is recorded. */
  newServers?: NewServerAllowance;
  /** Called with unexpected errors (recording failures, bugs in a client). */
  onError?: (error: unknown, context: string) => void;
  /** Metrics hooks: each performed ping, and how each look-up was answered. */
  observe?: StatusObserver;
  /** Flap damping (DAMPING_FAILURES, DAMPING_MINUTES); without it every failure is answered as it is. */
  damping?: DampingSettings;
}

export interface StatusObserver {
  ping?(mode: QueryMode, online: boolean, seconds: number): void;
  cacheResult?(result: StatusAnswer['cache']): void;
}

/** How long after expiry a success may still be served stale while it is refreshed. */
export const STALE_WHILE_REVALIDATE_MS = 5 * 60_000;
/** How old a success may be to stand in for a fresh ping when the service is saturated. */
export const SATURATION_STALE_MS = 24 * 60 * 60_000;

/** Why a query's leftovers (an ICMP echo, a Query) are aborted once its answer is in. */
const QUERY_DONE = new Error('query answered');
/** Why a query is aborted at PING_TIMEOUT_MS. */
const QUERY_DEADLINE = new Error('query deadline reached');

export { LOOKUP_RECORD_INTERVAL_MS } from './recorder.js';

/**
 * How many times a look-up tries again after the ping it joined was refused by another
 * client's budget; past it the look-up is answered as under saturation (stale or 503).
 */
const JOINED_REFUSALS_MAX = 3;

/** What pings are shared by: mode, host, port, and the Query asked for. */
function pingKey(parsed: ParsedAddress, mode: QueryMode, query: QueryRequest | undefined): string {
  return `${mode}|${parsed.host}|${parsed.port ?? ''}${query ? `|q${query.port ?? ''}` : ''}`;
}

/** A ping refused by a spent budget (the beforePing hook's 429). */
function isRateLimited(error: unknown): boolean {
  return error instanceof ObserverError && error.code === 'rate_limited';
}

/**
 * A refresh that did not ping because a budget was spent (the client's or the target IP's) or
 * the service sheds load (counted and logged once per episode where it is refused).
 */
function isRefused(error: unknown): boolean {
  return isRateLimited(error) || error instanceof TargetRateLimitedError || error instanceof OverloadedError;
}

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

/** Waiting for another instance's ping: first poll of the shared cache, backoff cap, count. */
const JOIN_POLL_FIRST_MS = 20;
const JOIN_POLL_MAX_MS = 250;
const JOIN_POLL_MAX_ATTEMPTS = 200;

export class StatusService implements StatusLookup {
  private readonly inFlight = new Map<string, Promise<CacheEntry>>();
  private pingsInFlight = 0;
  /** Parsed addresses by the text asked for: a cache hit should not parse the same text again. */
  private readonly parsed = new LRUCache<string, ParsedAddress>({ max: 10_000 });
  /** Writes checks and look-ups to the store, once there is a result; null without a store. */
  private readonly recorder: HistoryRecorder | null;
  /** The `stale: true` copy of a stored status, made once per stored status. */
  private readonly staleCopies = new WeakMap<StoredStatus, ServerStatus>();
  /** The damped answer of a failure (its last success, stale, with `failing`), made once per failure. */
  private readonly dampedCopies = new WeakMap<StoredStatus, ServerStatus>();

  constructor(private readonly deps: StatusServiceDeps) {
    const { store, clock, newServers, onError } = deps;
    this.recorder = store ? new HistoryRecorder({ store, clock, newServers, onError }) : null;
  }

  /** Resolves once what the look-ups so far write to the store is queued (tests, shutdown). */
  recorded(): Promise<void> {
    return this.recorder?.settled() ?? Promise.resolve();
  }

  /** Resolves once what the look-ups answered so far write to the store is queued or left out. */
  recordedSoFar(): Promise<void> {
    return this.recorder?.settledSoFar() ?? Promise.resolve();
  }

  /** Resolves once the check of this server being decided, if any, is queued or left out. */
  recordedFor(serverId: string): Promise<void> {
    return this.recorder?.settledFor(serverId) ?? Promise.resolve();
  }

  /** Pings in flight right now (coalesced requests count once). */
  get activePings(): number {
    return this.pingsInFlight;
  }

  async lookup(address: string, mode: QueryMode, options: LookupOptions = {}): Promise<StatusAnswer> {
    const parsed = this.parse(address);
    const key = pingKey(parsed, mode, options.query);
    const entry = await this.deps.cache.get(key);
    const job = this.job(key, parsed, mode, entry, options);
    this.count(options);
    const answer = await this.answerLookup(job, entry);
    this.recordLookup(job);
    return answer;
  }

  cached(address: string, mode: QueryMode, options: LookupOptions = {}): StatusAnswer | undefined {
    const { cache } = this.deps;
    if (!cache.peek) return undefined;
    let job: PingJob;
    let answer: StatusAnswer | undefined;
    try {
      const parsed = this.parse(address);
      const key = pingKey(parsed, mode, options.query);
      const entry = cache.peek(key);
      if (entry === undefined) return undefined;
      job = this.job(key, parsed, mode, entry, options);
      answer = this.decide(entry, job);
    } catch {
      // An invalid address, a saturated service: lookup() gives the error.
      return undefined;
    }
    if (answer === undefined) return undefined;
    this.count(options);
    this.recordLookup(job);
    return answer;
  }

  private job(key: string, parsed: ParsedAddress, mode: QueryMode, entry: CacheEntry | undefined, options: LookupOptions): PingJob {
    const id = entry?.latest.status.server_id ?? serverId(editionOf(mode), parsed.host, parsed.port ?? defaultPort(mode));
    const { query, beforePing, clientKey } = options;
    const job: PingJob = { key, parsed, mode, id };
    if (query) job.query = query;
    if (beforePing) job.beforePing = beforePing;
    if (clientKey) job.clientKey = clientKey;
    return job;
  }

  /** A user's look-up counts as a server query in /stats (the refresher's do not). */
  private count(options: LookupOptions): void {
    if (!options.background) this.deps.store?.count({ serverQueries: 1 });
  }

  /** A user's look-up that had an answer, for /trends. */
  private recordLookup(job: PingJob): void {
    if (job.clientKey) this.recorder?.recordLookup(job.id, job.clientKey);
  }

  /** Resolves once the ping in flight for this target (the refresh a stale answer started), if any, has ended. */
  async pingEnded(address: string, mode: QueryMode): Promise<void> {
    await this.inFlight.get(pingKey(this.parse(address), mode, undefined))?.then(
      () => undefined,
      () => undefined,
    );
  }

  private parse(address: string): ParsedAddress {
    let parsed = this.parsed.get(address);
    if (parsed === undefined) {
      parsed = parseAddress(address);
      this.parsed.set(address, parsed);
    }
    return parsed;
  }

  /** The look-up's answer: from the cache, from the ping it starts or joins, or stale / refused. */
  private async answerLookup(own: PingJob, entry: CacheEntry | undefined): Promise<StatusAnswer> {
    const { key } = own;
    let current = entry;
    for (let attempt = 1; ; attempt += 1) {
      const decided = this.decide(current, own);
      if (decided) return decided;
      const joined = this.inFlight.has(key);
      let fresh: CacheEntry;
      try {
        fresh = await this.refresh(own);
      } catch (error) {
        if (error instanceof TargetRateLimitedError) return this.overTargetBudget(current ?? (await this.deps.cache.get(key)), error);
        // The ping this request joined was refused by another client's spent budget (its
        // beforePing): that refusal is not this client's, so it tries again on its own budget,
        // as a new look-up (the cache again, then the same ping cap as every new ping).
        if (!joined || !isRateLimited(error)) throw error;
        current = await this.deps.cache.get(key);
        if (attempt >= JOINED_REFUSALS_MAX) return this.busy(current?.lastSuccess ?? null);
        continue;
      }
      const { latest } = fresh;
      return this.damped(fresh) ?? this.answer(latest, 'MISS', Math.max(0, latest.checkedAt + this.deps.ttlSeconds * 1000 - this.deps.clock.now()));
    }
  }

  /**
   * What a look-up can answer without waiting for a ping of its own: fresh (HIT), stale while
   * one background refresh runs, or, with every ping slot taken, the last success under 24
   * hours (or 503). Undefined: the look-up pings (or joins the ping in flight).
   */
  private decide(entry: CacheEntry | undefined, job: PingJob): StatusAnswer | undefined {
    const ttlMs = this.deps.ttlSeconds * 1000;
    const now = this.deps.clock.now();
    if (entry && now < entry.latest.checkedAt + ttlMs) {
      return this.damped(entry) ?? this.answer(entry.latest, 'HIT', entry.latest.checkedAt + ttlMs - now);
    }
    const last = entry?.lastSuccess ?? null;
    const saturated = !this.inFlight.has(job.key) && this.pingsInFlight >= this.deps.maxConcurrentPings;
    if (last && entry?.latest.status.online && now < last.checkedAt + ttlMs + STALE_WHILE_REVALIDATE_MS) {
      // Stale-while-revalidate: one background refresh, unless every ping slot is taken (the
      // stale answer then stands alone). The refresh is charged to this request's budget
      // (beforePing) like any ping it causes; refused, it does not ping and the stale answer
      // stands. Its failure is logged, never thrown.
      if (!saturated) {
        this.refresh(job).catch((error: unknown) => {
          if (!isRefused(error)) this.deps.onError?.(error, 'background refresh');
        });
      }
      return this.answer(last, 'STALE', 0, true);
    }
    if (saturated) return this.busy(last);
    return undefined;
  }

  /** No ping slot for this look-up: the last success under 24 hours, stale, or 503. */
  private busy(last: StoredStatus | null): StatusAnswer {
    if (last && this.deps.clock.now() < last.checkedAt + SATURATION_STALE_MS) return this.answer(last, 'STALE', 0, true);
    throw new ObserverError('service_busy', 503, 'The service is busy with other queries. Please retry shortly.', {
      headers: { 'Retry-After': '5' },
    });
  }

  /** The target IP's pings of the minute are spent: the last success under 24 hours, stale, or the 429. */
  private overTargetBudget(entry: CacheEntry | undefined, error: TargetRateLimitedError): StatusAnswer {
    const last = entry?.lastSuccess;
    if (last && this.deps.clock.now() < last.checkedAt + SATURATION_STALE_MS) return this.answer(last, 'STALE', 0, true);
    throw error;
  }

  /**
   * A failure behind a recent success while damping holds (docs/api.md, "Flap damping"): the
   * last success, stale, with `failing` saying since when and why the server does not answer.
   */
  private damped(entry: CacheEntry): StatusAnswer | undefined {
    const { latest, lastSuccess, streak } = entry;
    const { damping } = this.deps;
    if (latest.status.online || !lastSuccess || !streak || !damping || !dampingHolds(streak, damping, this.deps.clock.now())) return undefined;
    let status = this.dampedCopies.get(latest);
    if (status === undefined) {
      status = dampedStatus(lastSuccess.status, latest.status, streak);
      this.dampedCopies.set(latest, status);
    }
    this.deps.observe?.cacheResult?.('STALE');
    return { status, cache: 'STALE', maxAgeSeconds: 0 };
  }

  private answer(stored: StoredStatus, cache: StatusAnswer['cache'], freshMs: number, stale = false): StatusAnswer {
    let status = stored.status;
    if (stale) {
      status = this.staleCopies.get(stored) ?? { ...stored.status, stale: true };
      this.staleCopies.set(stored, status);
    }
    this.deps.observe?.cacheResult?.(cache);
    return {
      status,
      cache,
      maxAgeSeconds: Math.max(0, Math.floor(freshMs / 1000)),
    };
  }

  /**
   * One shared ping per target; the result is cached and recorded. The ping slot is reserved
   * here, synchronously, before the first await (a shared cache's claim and reads), so that
   * concurrent look-ups never start more than `maxConcurrentPings` pings.
   */
  private refresh(job: PingJob): Promise<CacheEntry> {
    const { key } = job;
    const pending = this.inFlight.get(key);
    if (pending) return pending;
    this.pingsInFlight += 1;
    const promise = this.pingOrJoin(job).finally(() => {
      this.pingsInFlight -= 1;
      this.inFlight.delete(key);
    });
    this.inFlight.set(key, promise);
    return promise;
  }

  /**
   * With a shared cache, instances coalesce too: the one that claims the target (an owner
   * token, released by check-and-delete) gets the entry with its claim, since another instance
   * may have pinged and released in between, and pings only if it is still stale; writing the
   * result releases the claim. The others wait for the owner's result to land in the cache,
   * polling with backoff on the injected clock, and fall back to their own ping if it does not
   * land within the ping budget.
   */
  private async pingOrJoin(job: PingJob): Promise<CacheEntry> {
    const { cache, clock } = this.deps;
    const { key } = job;
    if (!cache.claim) return this.pingAndStore(job);
    const budget = this.deps.pingTimeoutMs + 1_000;
    const fresh = (entry: CacheEntry) => clock.now() < entry.latest.checkedAt + this.deps.ttlSeconds * 1000;
    const { token, entry: seen } = await cache.claim(key, budget);
    if (token !== null) {
      const claim = { token, previous: seen, released: false };
      try {
        if (seen && fresh(seen)) return seen;
        return await this.pingAndStore(job, claim);
      } finally {
        if (!claim.released) await cache.release?.(key, token);
      }
    }
    if (seen && fresh(seen)) return seen;
    const before = seen?.latest.checkedAt ?? -1;
    const deadline = clock.now() + budget;
    let delay = JOIN_POLL_FIRST_MS;
    for (let attempt = 0; attempt < JOIN_POLL_MAX_ATTEMPTS && clock.now() < deadline; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, JOIN_POLL_MAX_MS);
      const entry = await cache.get(key, { skipL1: true });
      // Only the owner's result: newer than what this instance saw, and fresh. An older one (a
      // local copy read while Redis is away) is not an answer.
      if (entry && entry.latest.checkedAt > before && fresh(entry)) return entry;
    }
    return this.pingAndStore(job);
  }

  /**
   * Pings, then caches and records the result. With a claim, the entry read with it stands for
   * the previous one, and the write releases it.
   */
  private async pingAndStore(job: PingJob, claim?: { token: string; previous: CacheEntry | undefined; released: boolean }): Promise<CacheEntry> {
    await job.beforePing?.();
    const { key, parsed, mode, id, query } = job;
    const { cache, clock } = this.deps;
    const stored = await this.query(parsed, mode, id, query);
    const previous = claim ? claim.previous : await cache.get(key);
    const entry: CacheEntry = {
      latest: stored,
      lastSuccess: stored.status.online ? stored : (previous?.lastSuccess ?? null),
      streak: stored.status.online ? null : this.nextStreak(previous, stored.checkedAt),
    };
    const keepMs = entry.lastSuccess
      ? Math.max(this.deps.ttlSeconds * 1000, entry.lastSuccess.checkedAt + SATURATION_STALE_MS - clock.now())
      : this.deps.ttlSeconds * 1000;
    if (claim) claim.released = true;
    await cache.set(key, entry, keepMs, claim?.token);
    this.recorder?.recordCheck(checkRecord(job, stored), job.clientKey);
    return entry;
  }

  /**
   * The failure streak after a failure checked at `now`: it goes on from the previous failure's,
   * and starts only right after a success recent enough to be served stale (within the TTL and
   * the stale-while-revalidate window): an old success is no evidence the server is up.
   */
  private nextStreak(previous: CacheEntry | undefined, now: number): FailureStreak | null {
    if (!this.deps.damping || !previous?.lastSuccess) return null;
    if (previous.streak) return addFailure(previous.streak, now);
    if (!previous.latest.status.online) return null;
    if (now > previous.lastSuccess.checkedAt + this.deps.ttlSeconds * 1000 + STALE_WHILE_REVALIDATE_MS) return null;
    return addFailure(null, now);
  }

  /** Resolve, guard and ping within one deadline; every failure but 400/404 is `online: false`. */
  private async query(parsed: ParsedAddress, mode: QueryMode, id: string, query?: QueryRequest): Promise<StoredStatus> {
    // One deadline for the whole query, and one signal: it aborts at the deadline, and also ends
    // what is left (an ICMP echo) once we return. A plain timer and a Deadline rather than
    // AbortSignal.any([AbortSignal.timeout(…), …]): those keep weakly referenced signals and a
    // timer each, a measurable share of an uncached look-up's CPU (docs/performance.md).
    const done = new Deadline();
    const deadline = setTimeout(() => done.abort(QUERY_DEADLINE), this.deps.pingTimeoutMs);
    const started = performance.now();
    try {
      const stored = await this.queryWithin(parsed, mode, id, done, query);
      this.deps.observe?.ping?.(mode, stored.status.online, (performance.now() - started) / 1000);
      return stored;
    } finally {
      clearTimeout(deadline);
      // Only an echo or a Query past their grace still listen; nothing else holds the signal
      // once we return.
      if (done.listened) done.abort(QUERY_DONE);
    }
  }

  private async queryWithin(
    parsed: ParsedAddress,
    mode: QueryMode,
    id: string,
    signal: AbortLike,
    query?: QueryRequest,
  ): Promise<StoredStatus> {
    const base = offlineStatus(
      queryEcho(parsed, mode),
      { server_id: id },
    );
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
      if (index > 0 && !(await this.withinBudget(ip))) break;
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

  private async withinBudget(ip: string): Promise<boolean> {
    try {
      await this.deps.targetBudget?.take(ip);
      return true;
    } catch (error) {
      if (error instanceof TargetRateLimitedError) return false;
      throw error;
    }
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

/** The history row of a performed ping. */
function checkRecord({ id, parsed, mode }: PingJob, { status, checkedAt }: StoredStatus): CheckRecord {
  return {
    serverId: id,
    edition: editionOf(mode),
    host: parsed.host,
    port: parsed.port ?? defaultPort(mode),
    checkedAt,
    online: status.online,
    playersOnline: status.players?.online ?? null,
    playersMax: status.players?.max ?? null,
    latencyMs: status.roundTripLatency,
  };
}

/** The damped answer: the last success, stale, and `failing` (since when, how often, why). */
function dampedStatus(success: ServerStatus, failure: ServerStatus, streak: FailureStreak): ServerStatus {
  return {
    ...success,
    stale: true,
    failing: {
      since: new Date(streak.since).toISOString(),
      failures: streak.failures,
      error: failure.error,
      error_code: failure.error_code,
    },
  };
}
