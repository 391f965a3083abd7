/**
 * A watched server's status, as the status service answers any look-up (its cache,
 * coalescing, budgets and guard apply).
 */
import type { Clock } from '../core/clock.js';
import { HostNotFoundError, ObserverError, TargetRefusedError } from '../core/errors.js';
import { offlineStatus, type ServerStatus } from '../core/types.js';
import { STALE_WHILE_REVALIDATE_MS } from '../status/service.js';
import type { StatusLookup } from '../status/types.js';
import type { WatchRow } from '../store/watch-store.js';

/** How long a verification waits for the refresh a stale answer started, beyond PING_TIMEOUT_MS. */
const REFRESH_GRACE_MS = 500;

export class ServerLook {
  constructor(
    private readonly status: StatusLookup,
    private readonly clock: Clock,
    /** PING_TIMEOUT_MS: how long a check waits for the refresh a stale answer started. */
    private readonly pingTimeoutMs: number,
    /** STATUS_CACHE_TTL, in ms: with the stale-while-revalidate window, whether a stale answer started a refresh. */
    private readonly ttlMs: number,
  ) {}

  /**
   * The server's status; null when the service refuses the look-up (busy, a budget spent). A
   * name gone from DNS, or resolving to a refused address, is an offline status: the server
   * is not reachable.
   */
  async now(watch: WatchRow): Promise<ServerStatus | null> {
    try {
      const answer = await this.status.lookup(watch.address, watch.edition === 'bedrock' ? 'bedrock' : 'java', { background: true });
      return answer.status;
    } catch (error) {
      if (error instanceof HostNotFoundError || error instanceof TargetRefusedError) {
        const query = { host: watch.host, port: 0, legacy: false, bedrock: watch.edition === 'bedrock' };
        const checkedAt = new Date(this.clock.now()).toISOString();
        return offlineStatus(query, { error: error instanceof HostNotFoundError ? 'host not found' : 'address refused', checked_at: checkedAt });
      }
      if (error instanceof ObserverError) return null;
      throw error;
    }
  }

  /**
   * The status once the refresh a stale answer started has landed: a stale answer served
   * while it is refreshed (stale-while-revalidate) is asked for again (after 100 ms, then
   * twice as long each time, within PING_TIMEOUT_MS) until a fresh one comes. Asking again
   * reads the cache: the refresh is the only ping. So a watch whose cached status expired
   * costs one check, not a check and a recheck. Any other stale answer (damped, or older: the
   * service busy, a budget spent) is final.
   */
  async settled(watch: WatchRow): Promise<ServerStatus | null> {
    const deadline = Date.now() + this.pingTimeoutMs + REFRESH_GRACE_MS;
    let status = await this.now(watch);
    for (let wait = 100; status !== null && this.refreshing(status) && Date.now() + wait < deadline; wait *= 2) {
      await new Promise((resolve) => setTimeout(resolve, wait));
      status = await this.now(watch);
    }
    return status;
  }

  /** Whether a stale answer is one served while a refresh runs (young enough for stale-while-revalidate). */
  private refreshing(status: ServerStatus): boolean {
    if (!status.stale || status.failing !== undefined) return false;
    return this.clock.now() < Date.parse(status.checked_at) + this.ttlMs + STALE_WHILE_REVALIDATE_MS;
  }

  /**
   * A fresh status, or null when only a stale one came: an owner who just put the token in the
   * MOTD is answered from the refresh, and a proof is never read from a stale status (it may
   * be a day old).
   */
  async fresh(watch: WatchRow): Promise<ServerStatus | null> {
    const status = await this.settled(watch);
    return status?.stale ? null : status;
  }
}

/** Whether the server's MOTD holds the verification token. */
export function motdHolds(status: ServerStatus | null, token: string): boolean {
  return status !== null && status.online && status.motd !== null && (status.motd.clean.includes(token) || status.motd.raw.includes(token));
}
