/**
 * Fixed-window counting, shared by the per-client rate limits (http/rate-limit.ts, whose
 * stores count in memory or Redis) and the per-target ping budget (status/target-budget.ts),
 * and the IETF structured fields (draft-ietf-httpapi-ratelimit-headers) a limited answer carries:
 *   RateLimit-Policy: "status";q=120;w=60
 *   RateLimit: "status";r=87;t=42
 */
export interface WindowCount {
  /** Hits counted in the current window, this one included. */
  count: number;
  /** Milliseconds until the window ends. */
  resetMs: number;
}

/** Counts hits per key in fixed windows. */
export interface WindowCounter {
  /**
   * Counts `units` hits (default 1; a bulk look-up counts one per entry); `limit` lets a
   * shared store decide how exactly it must count.
   */
  hit(key: string, windowMs: number, limit: number, units?: number): WindowCount | Promise<WindowCount>;
}

/** Whole seconds until a window ends, at least 1 (for `t=` and Retry-After). */
export function secondsLeft(resetMs: number): number {
  return Math.max(1, Math.ceil(resetMs / 1000));
}

/** The `RateLimit-Policy` and `RateLimit` fields of a policy after a count. */
export function rateLimitFields(policy: string, limit: number, windowMs: number, { count, resetMs }: WindowCount) {
  return {
    'RateLimit-Policy': `"${policy}";q=${limit};w=${windowMs / 1000}`,
    RateLimit: `"${policy}";r=${Math.max(0, limit - count)};t=${secondsLeft(resetMs)}`,
  };
}
