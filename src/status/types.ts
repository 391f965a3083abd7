import type { QueryErrorCode } from '../core/errors.js';
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
  /**
   * Opaque keyed hash of the client as trends and the new-server allowance count it
   * (ClientHasher.lookupKey: IPv6 by /48).
   */
  clientKey?: string;
  /**
   * Called right before this lookup causes a ping (never for a cached answer or a ping it
   * joins); it throws (a 429) to refuse the ping. Routes use it to charge the ping to the
   * client's status budget (http/ping-budget.ts).
   */
  beforePing?: () => void | Promise<void>;
  /** Also run a Query (GS4 full stat) beside the ping; the answer gets `queryResult`. Part of the cache key. */
  query?: QueryRequest;
  /** A look-up by the background refresher: not counted as a user's server query. */
  background?: boolean;
}

export interface QueryRequest {
  /** UDP port of the Query; default: the game port. */
  port?: number;
}

/**
 * Looks a server up: parse → resolve → guard → ping → normalise → cache → record.
 * Rejects with InvalidAddressError / TargetRefusedError (400) and HostNotFoundError (404);
 * every failed ping is a resolved answer with `online: false`.
 */
export interface StatusLookup {
  lookup(address: string, mode: QueryMode, options?: LookupOptions): Promise<StatusAnswer>;
  /**
   * The answer at once, when what this instance holds in memory decides it (a fresh entry, a
   * stale one whose refresh it starts, a damped failure), counted and recorded as `lookup`
   * would; undefined otherwise, and then `lookup` answers. Never throws: an error is `lookup`'s
   * to give.
   */
  cached?(address: string, mode: QueryMode, options?: LookupOptions): StatusAnswer | undefined;
  /** Resolves once the ping in flight for this target (the refresh a stale answer started), if any, has ended. */
  pingEnded?(address: string, mode: QueryMode): Promise<void>;
}

/** `queryResult` when the Query failed: the safe sentence and its code (docs/api.md, "Query"). */
export interface QueryFailure {
  error: string;
  error_code: QueryErrorCode;
}
