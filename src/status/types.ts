import type { QueryMode, ServerStatus } from '../core/types.js';

/** How a status answer was produced, for `X-Cache`. */
export type CacheState = 'HIT' | 'MISS' | 'STALE';

export interface StatusAnswer {
  status: ServerStatus;
  cache: CacheState;
  /** Seconds the answer stays fresh, for `Cache-Control: max-age`. */
  maxAgeSeconds: number;
}

export interface LookupOptions {
  /** Opaque keyed hash of the client (ClientHasher), for distinct-client trends. */
  clientKey?: string;
  /**
   * Called right before this lookup causes a ping (never for a cached answer or a ping it
   * joins); it throws (a 429) to refuse the ping. Routes use it to charge the ping to the
   * client's status budget (http/ping-budget.ts).
   */
  beforePing?: () => void | Promise<void>;
}

/**
 * Looks a server up: parse → resolve → guard → ping → normalise → cache → record.
 * Rejects with InvalidAddressError / TargetRefusedError (400) and HostNotFoundError (404);
 * every failed ping is a resolved answer with `online: false`.
 */
export interface StatusLookup {
  lookup(address: string, mode: QueryMode, options?: LookupOptions): Promise<StatusAnswer>;
}
