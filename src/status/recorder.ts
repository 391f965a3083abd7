/**
 * What a look-up leaves in the history store (docs/hostile-clients.md, "Storage"), written
 * only once there is a result, never for a name that did not resolve:
 *  - a performed ping's check, and with it the server's row, for a server the store already
 *    knows, or within the pinging client's NEW_SERVERS_PER_CLIENT_PER_DAY; past it the status
 *    is answered and cached but not recorded (the background refresher adds no server);
 *  - a client's look-up (for the trends), at most once a minute per client and server, and
 *    only for a server the store keeps.
 * Deciding may read the store (is this server new?), so it runs after the answer: a request
 * never waits for the database.
 */
import { LRUCache } from 'lru-cache';
import type { Clock } from '../core/clock.js';
import { settleWithin } from '../core/settle-within.js';
import type { CheckRecord, Store } from '../store/types.js';
import type { NewServerAllowance } from './budgets.js';

/** A client's look-up of a server is recorded at most once per this period (trends count days). */
export const LOOKUP_RECORD_INTERVAL_MS = 60_000;
/** Longest wait for the store to say whether a server is new; past it the server counts as new. */
const KNOWN_READ_MS = 1_000;
/** Server ids known to be in the store, remembered so that a known server costs no read. */
const KNOWN_SERVERS_MAX = 100_000;
/** Clients whose last look-up's pair key is kept; past it the memo starts again. */
const LAST_PAIRS_MAX = 10_000;

/**
 * A bound of `count` entries, counted through `maxSize` rather than `max`: lru-cache allocates
 * all `max` slots up front, where `maxSize` lets the cache grow with use.
 */
function entries(count: number) {
  return { maxSize: count, sizeCalculation: () => 1 };
}

export interface HistoryRecorderDeps {
  store: Store;
  clock: Clock;
  /** Without it, every check is recorded. */
  newServers?: NewServerAllowance | undefined;
  onError?: ((error: unknown, context: string) => void) | undefined;
}

export class HistoryRecorder {
  /** Client+server pairs recorded within the last LOOKUP_RECORD_INTERVAL_MS. */
  private readonly recentLookups: LRUCache<string, true>;
  private readonly knownServers = new LRUCache<string, true>(entries(KNOWN_SERVERS_MAX));
  /** Each client's last pair (pairOf), for LAST_PAIRS_MAX clients at most. */
  private readonly lastPairs = new Map<string, { serverId: string; pair: string }>();
  /** Per server id, whether the check being decided is recorded (a look-up waits for it). */
  private readonly recordings = new Map<string, Promise<boolean>>();
  private readonly pending = new Set<Promise<unknown>>();
  /** The last check's write: decisions run side by side, checks are queued in ping order. */
  private lastWrite: Promise<unknown> = Promise.resolve();

  constructor(private readonly deps: HistoryRecorderDeps) {
    this.recentLookups = new LRUCache<string, true>({
      ...entries(50_000),
      ttl: LOOKUP_RECORD_INTERVAL_MS,
      ttlAutopurge: false,
      ttlResolution: 0,
      perf: { now: () => deps.clock.now() },
    });
  }

  /** A performed ping: counted at once; its check written if the server is known or the client may add it. */
  recordCheck(check: CheckRecord, clientKey: string | undefined): void {
    const { store } = this.deps;
    store.count({ totalChecks: 1 });
    const id = check.serverId;
    const decided = this.mayRecord(id, clientKey);
    const decision = Promise.all([decided, this.lastWrite]).then(([record]) => {
      if (record) {
        store.recordCheck(check);
        this.knownServers.set(id, true);
      }
      return record;
    });
    this.lastWrite = decision.catch(() => undefined);
    this.recordings.set(id, decision);
    this.track(
      decision.finally(() => {
        if (this.recordings.get(id) === decision) this.recordings.delete(id);
      }),
    );
  }

  /** A client's look-up that had a result. */
  recordLookup(serverId: string, clientKey: string): void {
    const pair = this.pairOf(serverId, clientKey);
    if (this.recentLookups.has(pair)) return;
    this.recentLookups.set(pair, true);
    this.track(
      this.known(serverId).then((known) => {
        if (known) this.deps.store.recordLookup(serverId, clientKey);
        else this.recentLookups.delete(pair);
      }),
    );
  }

  /** The key of a client and server pair; the client's last one is kept: a client asking again makes no new string. */
  private pairOf(serverId: string, clientKey: string): string {
    const last = this.lastPairs.get(clientKey);
    if (last !== undefined && last.serverId === serverId) return last.pair;
    const pair = `${serverId}|${clientKey}`;
    if (this.lastPairs.size >= LAST_PAIRS_MAX) this.lastPairs.clear();
    this.lastPairs.set(clientKey, { serverId, pair });
    return pair;
  }

  /** Resolves once the decision on this server's check, if one is under way, is taken and its row queued. */
  async settledFor(serverId: string): Promise<void> {
    await this.recordings.get(serverId)?.catch(() => {});
  }

  /**
   * Resolves once the decisions under way now are taken and their rows queued; not those begun
   * meanwhile, so a steady stream of look-ups never holds it up. Each takes at most a
   * bounded read of the store.
   */
  async settledSoFar(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  /** Resolves once every decision under way is taken and its rows queued (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  /**
   * A known server's check is always recorded; a new one only within the pinging client's
   * allowance, and never by the background refresher (no client), which re-checks whatever was
   * looked up and would otherwise record every name a client was refused.
   */
  private async mayRecord(serverId: string, clientKey: string | undefined): Promise<boolean> {
    if (!this.deps.newServers) return true;
    if (await this.known(serverId)) return true;
    return clientKey !== undefined && this.deps.newServers.allows(clientKey);
  }

  /** Whether the store has the server, or is about to (a check of it being decided). */
  private async known(serverId: string): Promise<boolean> {
    if (this.knownServers.has(serverId)) return true;
    const deciding = this.recordings.get(serverId);
    if (deciding) return deciding;
    const found = await settleWithin(this.deps.store.knowsServer(serverId).catch(() => false), KNOWN_READ_MS, false);
    if (found) this.knownServers.set(serverId, true);
    return found;
  }

  private track(work: Promise<unknown>): void {
    const settled = work.catch((error: unknown) => this.deps.onError?.(error, 'recording history'));
    this.pending.add(settled);
    void settled.finally(() => this.pending.delete(settled));
  }
}
