/** What one check changes, as a table: flap damping, first check, players threshold crossings. */
import { describe, expect, it } from 'vitest';
import { nextMemory, type WatchMemory } from '../../src/watch/transitions.js';

const DAMPING = { failures: 3, minutes: 5 };
const MIN = 60_000;
const online = (players: number | null = 1) => ({ online: true, players });
const offline = { online: false, players: null };
const fresh = (state: WatchMemory['state'], above = 0): WatchMemory => ({ state, failures: 0, fail_since: null, above });

/** Runs checks one minute apart from `start`; the events in order. */
function run(start: WatchMemory, seen: Array<{ online: boolean; players: number | null }>, threshold: number | null = null, damping = DAMPING) {
  let memory = start;
  const events: Array<string | null> = [];
  seen.forEach((s, i) => {
    const next = nextMemory(memory, s, threshold, damping, i * MIN);
    memory = next.memory;
    events.push(next.event);
  });
  return { events, memory };
}

describe('watch state changes', () => {
  it('learns the state at the first check without an event', () => {
    expect(run(fresh('unknown'), [online()]).events).toEqual([null]);
    expect(run(fresh('unknown'), [offline]).events).toEqual([null]);
  });

  it('turns offline at the DAMPING_FAILURES-th failure in a row, once', () => {
    expect(run(fresh('online'), [offline, offline, offline, offline]).events).toEqual([null, null, 'offline', null]);
  });

  it('turns offline once DAMPING_MINUTES have passed since the first failure, whatever the count', () => {
    const { events } = run(fresh('online'), [offline, offline], null, { failures: 100, minutes: 1 });
    expect(events).toEqual([null, 'offline']);
  });

  it('a success inside the damping forgets the streak: no event either way', () => {
    expect(run(fresh('online'), [offline, offline, online(), offline, offline]).events).toEqual([null, null, null, null, null]);
  });

  it('comes back online at the first success', () => {
    expect(run(fresh('offline'), [offline, online()]).events).toEqual([null, 'online']);
  });

  it('delivers a players threshold once per crossing', () => {
    const { events } = run(fresh('online'), [online(5), online(10), online(12), online(9), online(10)], 10);
    expect(events).toEqual([null, 'players_at_least', null, null, 'players_at_least']);
  });

  it('does not announce a threshold already reached at the first check or on coming back', () => {
    expect(run(fresh('unknown'), [online(20), online(20)], 10).events).toEqual([null, null]);
    expect(run(fresh('offline'), [online(20), online(20)], 10).events).toEqual(['online', null]);
  });
});
