/**
 * Flap damping (docs/api.md, "Flap damping"): after a success, a failed ping does not turn a
 * server offline at once. While damping holds, the last success is served with `stale: true`;
 * it stops holding at the DAMPING_FAILURES-th failure in a row, or once DAMPING_MINUTES have
 * passed since the first failure of the streak, whichever comes first. Every failure is still
 * recorded in history; damping only changes what is answered and when a watch sees a change.
 */
export interface DampingSettings {
  /** Failures in a row that end damping (1: the first failure is answered as it is). */
  failures: number;
  /** Minutes after the streak's first failure when damping ends whatever the count. */
  minutes: number;
}

/** Failures since the last success of one server. */
export interface FailureStreak {
  /** Failed pings in a row since the last success. */
  failures: number;
  /** When the first of them was checked (ms since the epoch). */
  since: number;
}

/** The streak after one more failure checked at `now` (`streak` null: the first since a success). */
export function addFailure(streak: FailureStreak | null, now: number): FailureStreak {
  return streak === null ? { failures: 1, since: now } : { failures: streak.failures + 1, since: streak.since };
}

/** Whether a server with this streak behind a success is still answered from that success. */
export function dampingHolds(streak: FailureStreak, settings: DampingSettings, now: number): boolean {
  return streak.failures < settings.failures && now - streak.since < settings.minutes * 60_000;
}
