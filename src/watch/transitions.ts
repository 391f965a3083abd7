/**
 * What one check of a verified watch changes (docs/watches.md), as a pure function:
 *  - online → offline once flap damping stops holding (status/damping.ts, the same rule and
 *    settings as status answers), offline → online at the first success;
 *  - the first check only learns the state: nothing is delivered for it;
 *  - `players_at_least`: one event when the player count reaches the threshold, then none
 *    until it has fallen below it (or the server went offline) and reached it again.
 * At most one event per check; a state change wins over a threshold crossing.
 */
import { addFailure, dampingHolds, type DampingSettings, type FailureStreak } from '../status/damping.js';
import type { WatchEventKind } from './payload.js';

export type WatchState = 'unknown' | 'online' | 'offline';

export interface WatchMemory {
  state: WatchState;
  failures: number;
  fail_since: number | null;
  /** 1 while the player count is at or above the threshold (the crossing was delivered). */
  above: number;
}

export interface Seen {
  online: boolean;
  players: number | null;
}

export function nextMemory(
  memory: WatchMemory,
  seen: Seen,
  threshold: number | null,
  damping: DampingSettings,
  now: number,
): { memory: WatchMemory; event: WatchEventKind | null } {
  if (seen.online) {
    const reached = threshold !== null && seen.players !== null && seen.players >= threshold;
    const cameBack = memory.state === 'offline';
    const crossed = reached && memory.above === 0 && memory.state !== 'unknown';
    return {
      memory: { state: 'online', failures: 0, fail_since: null, above: reached ? 1 : 0 },
      event: cameBack ? 'online' : crossed ? 'players_at_least' : null,
    };
  }
  const previous: FailureStreak | null = memory.fail_since === null ? null : { failures: memory.failures, since: memory.fail_since };
  const streak = addFailure(previous, now);
  if (memory.state === 'online' && dampingHolds(streak, damping, now)) {
    return { memory: { ...memory, failures: streak.failures, fail_since: streak.since }, event: null };
  }
  return {
    memory: { state: 'offline', failures: streak.failures, fail_since: streak.since, above: 0 },
    event: memory.state === 'online' ? 'offline' : null,
  };
}
