/** Time source passed into services so tests can drive it. */
export interface Clock {
  /** Milliseconds since the epoch (wall clock: it can step). */
  now(): number;
  /** Milliseconds on a clock that never steps, for durations; performance.now() when absent. */
  monotonic?(): number;
}

export const systemClock: Clock = { now: () => Date.now(), monotonic: () => performance.now() };

/** The clock's monotonic time, or the process's. */
export function monotonicTime(clock: Clock): () => number {
  return clock.monotonic ? () => clock.monotonic!() : () => performance.now();
}
