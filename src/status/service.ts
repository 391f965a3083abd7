/**
 * StatusService: parse → look up the cache → answer from it, or ping (one shared ping per
 * target) → cache → record. The parts live beside it: the ping itself (probe.ts), how long a
 * cached status answers (freshness.ts), the answers built from it (answers.ts), coalescing
 * across instances (shared-ping.ts).
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
import { ObserverError, OverloadedError, TargetRateLimitedError } from '../core/errors.js';
import type { Clock } from '../core/clock.js';
import { editionOf, type QueryMode } from '../core/types.js';
import { defaultPort, parseAddress, type ParsedAddress } from '../resolve/index.js';
import type { CheckRecord, Store } from '../store/types.js';
import type { StatusCache, StoredStatus, CacheEntry } from './cache.js';
import { serverId } from './server-id.js';
import type { LookupOptions, QueryRequest, StatusAnswer, StatusLookup } from './types.js';
import type { NewServerAllowance } from './budgets.js';
import { HistoryRecorder } from './recorder.js';
import type { DampingSettings } from './damping.js';
import { ServerProbe, type ProbeDeps } from './probe.js';
import { AnswerBuilder } from './answers.js';
import { entryAfterPing, isFresh, type FreshnessRules } from './freshness.js';
import { pingOrJoin, type HeldClaim } from './shared-ping.js';

export type { PingFunction, ProbeTarget } from './probe.js';
export { STALE_WHILE_REVALIDATE_MS, SATURATION_STALE_MS } from './freshness.js';
export { LOOKUP_RECORD_INTERVAL_MS } from './recorder.js';

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

export interface StatusServiceDeps extends Omit<ProbeDeps, 'observePing'> {
  cache: StatusCache;
  store?: Store | null;
  clock: Clock;
  ttlSeconds: number;
  maxConcurrentPings: number;
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

/**
 * How many times a look-up tries again after the ping it joined was refused by another
 * client's budget; past it the look-up is answered as under saturation (stale or 503).
 */
const JOINED_REFUSALS_MAX = 3;

/**
 * The keys of look-ups without a Query, by parsed address (kept while the address is): a cached
 * answer then makes no key string, which its cache look-up would hash anew.
 */
const plainKeys = new WeakMap<ParsedAddress, Partial<Record<QueryMode, string>>>();

/** What pings are shared by: mode, host, port, and the Query asked for. */
function pingKey(parsed: ParsedAddress, mode: QueryMode, query: QueryRequest | undefined): string {
  if (query) return `${mode}|${parsed.host}|${parsed.port ?? ''}|q${query.port ?? ''}`;
  let keys = plainKeys.get(parsed);
  if (keys === undefined) plainKeys.set(parsed, (keys = {}));
  return (keys[mode] ??= `${mode}|${parsed.host}|${parsed.port ?? ''}`);
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

export class StatusService implements StatusLookup {
  private readonly inFlight = new Map<string, Promise<CacheEntry>>();
  private pingsInFlight = 0;
  /** Parsed addresses by the text asked for: a cache hit should not parse the same text again. */
  private readonly parsed = new LRUCache<string, ParsedAddress>({ max: 10_000 });
  /** Writes checks and look-ups to the store, once there is a result; null without a store. */
  private readonly recorder: HistoryRecorder | null;
  private readonly rules: FreshnessRules;
  private readonly answers: AnswerBuilder;
  private readonly probe: ServerProbe;

  constructor(private readonly deps: StatusServiceDeps) {
    const { store, clock, newServers, onError, observe } = deps;
    this.recorder = store ? new HistoryRecorder({ store, clock, newServers, onError }) : null;
    this.rules = { ttlMs: deps.ttlSeconds * 1000, damping: deps.damping };
    this.answers = new AnswerBuilder({ clock, rules: this.rules, observe: (cache) => observe?.cacheResult?.(cache) });
    this.probe = new ServerProbe({ ...deps, observePing: (mode, online, seconds) => observe?.ping?.(mode, online, seconds) });
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

  /** Resolves once the ping in flight for this target (the refresh a stale answer started), if any, has ended. */
  async pingEnded(address: string, mode: QueryMode): Promise<void> {
    await this.inFlight.get(pingKey(this.parse(address), mode, undefined))?.then(
      () => undefined,
      () => undefined,
    );
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
      try {
        return this.answers.afterPing(await this.refresh(own));
      } catch (error) {
        if (error instanceof TargetRateLimitedError) return this.answers.overTargetBudget(current ?? (await this.deps.cache.get(key)), error);
        // The ping this request joined was refused by another client's spent budget (its
        // beforePing): that refusal is not this client's, so it tries again on its own budget,
        // as a new look-up (the cache again, then the same ping cap as every new ping).
        if (!joined || !isRateLimited(error)) throw error;
        current = await this.deps.cache.get(key);
        if (attempt >= JOINED_REFUSALS_MAX) return this.answers.busy(current?.lastSuccess ?? null);
      }
    }
  }

  /**
   * What the cache answers for this look-up without a ping of its own (see AnswerBuilder.fromCache);
   * a stale answer starts one background refresh, unless every ping slot is taken. The refresh
   * is charged to this request's budget (beforePing) like any ping it causes; refused, it does
   * not ping and the stale answer stands. Its failure is logged, never thrown.
   */
  private decide(entry: CacheEntry | undefined, job: PingJob): StatusAnswer | undefined {
    const saturated = !this.inFlight.has(job.key) && this.pingsInFlight >= this.deps.maxConcurrentPings;
    const decided = this.answers.fromCache(entry, saturated);
    if (decided?.refresh) {
      this.refresh(job).catch((error: unknown) => {
        if (!isRefused(error)) this.deps.onError?.(error, 'background refresh');
      });
    }
    return decided?.answer;
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
    const { cache, clock } = this.deps;
    const promise = pingOrJoin({
      cache,
      clock,
      key,
      budgetMs: this.deps.pingTimeoutMs + 1_000,
      isFresh: (entry) => isFresh(entry, this.rules, clock.now()),
      ping: (claim) => this.pingAndStore(job, claim),
    }).finally(() => {
      this.pingsInFlight -= 1;
      this.inFlight.delete(key);
    });
    this.inFlight.set(key, promise);
    return promise;
  }

  /**
   * Pings, then caches and records the result. With a claim, the entry read with it stands for
   * the previous one, and the write releases it.
   */
  private async pingAndStore(job: PingJob, claim?: HeldClaim): Promise<CacheEntry> {
    await job.beforePing?.();
    const { key, parsed, mode, id, query } = job;
    const { cache, clock } = this.deps;
    const stored = await this.probe.probe(parsed, mode, id, query);
    const previous = claim ? claim.previous : await cache.get(key);
    const { entry, keepMs } = entryAfterPing(previous, stored, this.rules, clock.now());
    if (claim) claim.released = true;
    await cache.set(key, entry, keepMs, claim?.token);
    this.recorder?.recordCheck(checkRecord(job, stored), job.clientKey);
    return entry;
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
