/**
 * One scheduled check of a watch (docs/watches.md). An unverified or paused watch only
 * looks for its owner's proof. A verified one reads its server's status and, when the state
 * changed, saves the event with the observation (watch-store.ts: one instance wins); it also
 * notes whether the proof is still there, and pauses the watch, with a `paused` event, once
 * the proof has not been seen for WATCH_PROOF_GRACE_DAYS.
 *
 * A stale answer whose refresh is under way is waited for within the check (look.ts). An
 * answer still undecided (damped, stale while the service is busy or a budget is spent, or
 * refused) decides nothing: the watch is looked at again after `recheckMs` (10 s), then twice
 * as long after each further undecided answer, never later than its interval. Rechecks draw
 * on the same budget as checks, so a watch stuck undecided costs one check per interval, as
 * any, after a few at first.
 */
import type { Clock } from '../core/clock.js';
import type { ServerStatus } from '../core/types.js';
import type { DampingSettings } from '../status/damping.js';
import type { WatchObservation, WatchRow, WatchStore } from '../store/watches/watch-store.js';
import { eventBody, snapshotOf, type WatchEventKind } from './payload.js';
import type { ServerLook } from './look.js';
import { nextMemory, type WatchState } from './transitions.js';
import type { WatchVerifier } from './verification.js';

export interface CheckTiming {
  /** Between two checks of a watch. */
  intervalMs: number;
  /** The first recheck after an undecided answer. */
  recheckMs: number;
  /** How long a verified watch may go without its proof being seen (WATCH_PROOF_GRACE_DAYS). */
  proofGraceMs: number;
}

export interface CheckerDeps {
  store: WatchStore;
  look: ServerLook;
  verifier: WatchVerifier;
  clock: Clock;
  damping: DampingSettings;
  timing: CheckTiming;
  /** PUBLIC_URL, for the links in event bodies. */
  publicUrl: string | null;
}

export class WatchChecker {
  constructor(private readonly deps: CheckerDeps) {}

  async check(watch: WatchRow): Promise<void> {
    if (watch.verified_at === null || watch.paused_at !== null) {
      await this.deps.verifier.verifyNow(watch);
      return;
    }
    const { store, look, clock } = this.deps;
    const status = await look.settled(watch);
    const failing = dampedFailure(status);
    if (failing && watch.state === 'online') {
      // Damped by the status service: its failure streak becomes the watch's, so the offline
      // answer that ends damping is delivered at once and damping is applied only once.
      const memory = { state: watch.state, failures: failing.failures, fail_since: failing.since, above: watch.above, last_checked_at: watch.last_checked_at };
      if (await store.saveObservation(watch, memory, null)) await this.recheck(watch);
      return;
    }
    // The time of the ping the answer represents: an answer no newer than the last one used
    // (another instance's cache may be older) tells nothing new.
    const checkedAt = status === null || status.stale ? null : Date.parse(status.checked_at);
    const usable = checkedAt !== null && Number.isFinite(checkedAt) && (watch.last_checked_at === null || checkedAt > watch.last_checked_at);
    if (status === null || !usable) {
      await this.recheck(watch);
      return;
    }
    await this.observe(watch, status, checkedAt, clock.now());
  }

  /** Saves what a decisive answer says, its event if any, and how the proof stands. */
  private async observe(watch: WatchRow, status: ServerStatus, checkedAt: number, now: number): Promise<void> {
    const { store, verifier, damping, timing } = this.deps;
    const memory = { state: watch.state as WatchState, failures: watch.failures, fail_since: watch.fail_since, above: watch.above };
    const seen = { online: status.online, players: status.players?.online ?? null };
    const next = nextMemory(memory, seen, watch.players_at_least, damping, checkedAt);
    const proof = await verifier.stillProven(watch, status);
    const proofSeenAt = proof.proof_seen_at ?? watch.proof_seen_at ?? watch.verified_at!;
    const observation: WatchObservation = { ...next.memory, ...proof, last_checked_at: checkedAt, rechecks: 0 };
    let event: { kind: WatchEventKind; downSince?: number | null } | null = next.event === null ? null : { kind: next.event, downSince: next.memory.fail_since };
    if (now - proofSeenAt > timing.proofGraceMs) {
      // The proof is gone: this check's change, if any, is not delivered; the pause is.
      observation.paused_at = now;
      event = { kind: 'paused' };
    }
    const saved =
      event === null
        ? null
        : {
            kind: event.kind,
            now,
            body: eventBody(
              watch,
              { kind: event.kind, sequence: watch.sequence + 1, at: event.kind === 'paused' ? now : checkedAt, server: snapshotOf(status), downSince: event.downSince ?? null },
              this.deps.publicUrl,
            ),
          };
    await store.saveObservation(watch, observation, saved);
  }

  /** Looks at the watch again after an undecided answer, backing off. */
  private async recheck(watch: WatchRow): Promise<void> {
    const { store, clock, timing } = this.deps;
    const wait = Math.min(timing.intervalMs, timing.recheckMs * 2 ** Math.min(watch.rechecks, 20));
    await store.reschedule(watch.id, clock.now() + wait, watch.rechecks + 1);
  }
}

/** The failure streak of a damped answer (the last success, stale, with `failing`); null otherwise. */
function dampedFailure(status: ServerStatus | null): { failures: number; since: number } | null {
  const failing = status?.stale ? (status.failing as { failures?: unknown; since?: unknown } | undefined) : undefined;
  if (typeof failing?.failures !== 'number' || typeof failing.since !== 'string') return null;
  const since = Date.parse(failing.since);
  return Number.isFinite(since) ? { failures: failing.failures, since } : null;
}
