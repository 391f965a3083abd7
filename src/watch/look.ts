/**
 * A watched server's status, as the status service answers any look-up (its cache,
 * coalescing, budgets and guard apply).
 */
import type { Clock } from '../core/clock.js';
import { HostNotFoundError, ObserverError, TargetRefusedError } from '../core/errors.js';
import { offlineStatus, type ServerStatus } from '../core/types.js';
import type { StatusLookup } from '../status/types.js';
import type { WatchRow } from '../store/watches/watch-store.js';

/** How long a verification waits for the refresh a stale answer started, beyond PING_TIMEOUT_MS. */
const REFRESH_GRACE_MS = 500;

export class ServerLook {
  constructor(
    private readonly status: StatusLookup,
    private readonly clock: Clock,
    /** PING_TIMEOUT_MS: how long a check waits for the refresh a stale answer started. */
    private readonly pingTimeoutMs: number,
  ) {}

  /**
   * The server's status; null when the service refuses the look-up (busy, a budget spent). A
   * name gone from DNS, or resolving to a refused address, is an offline status: the server
   * is not reachable.
   */
  async now(watch: WatchRow): Promise<ServerStatus | null> {
    try {
      const answer = await this.status.lookup(watch.address, modeOf(watch), { background: true });
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
   * The status once the refresh a stale answer started has landed: a stale answer is asked
   * for again when the ping in flight for its server has ended (within PING_TIMEOUT_MS).
   * Asking again reads the cache: the refresh is the only ping, so a watch whose cached
   * status expired costs one check, not a check and a recheck. A damped answer (stale, with
   * `failing`) is final, and so is a stale one with no ping in flight (busy, a budget spent).
   */
  async settled(watch: WatchRow): Promise<ServerStatus | null> {
    const status = await this.now(watch);
    if (!status?.stale || status.failing !== undefined || !this.status.pingEnded) return status;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.status.pingEnded(watch.address, modeOf(watch)),
      new Promise((resolve) => (timer = setTimeout(resolve, this.pingTimeoutMs + REFRESH_GRACE_MS))),
    ]);
    clearTimeout(timer);
    return this.now(watch);
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

function modeOf(watch: WatchRow): 'java' | 'bedrock' {
  return watch.edition === 'bedrock' ? 'bedrock' : 'java';
}
