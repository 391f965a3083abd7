/**
 * A watched server's status, as the status service answers any look-up (its cache,
 * coalescing, budgets and guard apply).
 */
import type { Clock } from '../core/clock.js';
import { HostNotFoundError, ObserverError, TargetRefusedError } from '../core/errors.js';
import { offlineStatus, type ServerStatus } from '../core/types.js';
import type { StatusLookup } from '../status/types.js';
import type { WatchRow } from '../store/watch-store.js';

/** How long a verification waits for the refresh a stale answer started, beyond PING_TIMEOUT_MS. */
const REFRESH_GRACE_MS = 500;

export class ServerLook {
  constructor(
    private readonly status: StatusLookup,
    private readonly clock: Clock,
    /** PING_TIMEOUT_MS: how long a verification waits for the refresh a stale answer started. */
    private readonly pingTimeoutMs: number,
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
   * A fresh status: waits (within PING_TIMEOUT_MS) for the refresh a stale answer started, so
   * an owner who just put the token in the MOTD is answered from that refresh; null when only
   * a stale one came. A proof is never read from a stale status (it may be a day old).
   */
  async fresh(watch: WatchRow): Promise<ServerStatus | null> {
    const deadline = Date.now() + this.pingTimeoutMs + REFRESH_GRACE_MS;
    let status = await this.now(watch);
    while (status?.stale && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = await this.now(watch);
    }
    return status?.stale ? null : status;
  }
}

/** Whether the server's MOTD holds the verification token. */
export function motdHolds(status: ServerStatus | null, token: string): boolean {
  return status !== null && status.online && status.motd !== null && (status.motd.clean.includes(token) || status.motd.raw.includes(token));
}
