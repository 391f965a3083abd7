import type { Clock } from '../../src/core/clock.js';

/**
 * A clock the test moves by hand: `advance` moves the wall and the monotonic clock together,
 * `step` the wall clock alone (as an NTP step would).
 */
export class FakeClock implements Clock {
  private elapsed = 0;
  constructor(private ms = Date.parse('2026-11-22T12:00:00Z')) {}
  now(): number {
    return this.ms;
  }
  monotonic(): number {
    return this.elapsed;
  }
  advance(ms: number): void {
    this.ms += ms;
    this.elapsed += ms;
  }
  step(ms: number): void {
    this.ms += ms;
  }
}
