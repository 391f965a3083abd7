import type { Clock } from '../../src/core/clock.js';

/** A clock the test moves by hand. */
export class FakeClock implements Clock {
  constructor(private ms = Date.parse('2026-11-22T12:00:00Z')) {}
  now(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}
