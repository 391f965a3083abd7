/**
 * The in-memory rate-limit store on its own: fixed windows per client, bounded however many
 * clients come within one window.
 */
import { describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from '../../src/http/rate-limit.js';
import { FakeClock } from '../support/clock.js';

/** 1,000 new clients within one window, and a steady one seen first and then every `every` of them. */
function flood(store: MemoryRateLimitStore, every: number): void {
  store.hit('status:steady', 60_000, 1_000);
  for (let i = 0; i < 1_000; i += 1) {
    store.hit(`status:flood${i}`, 60_000, 1_000);
    if (i % every === 0) store.hit('status:steady', 60_000, 1_000);
  }
}

describe('MemoryRateLimitStore', () => {
  it('counts per client and window, and starts again when the window ends', () => {
    const clock = new FakeClock();
    const store = new MemoryRateLimitStore(() => clock.now());
    expect(store.hit('status:a', 60_000, 3)).toEqual({ count: 1, resetMs: 60_000 });
    clock.advance(1_000);
    expect(store.hit('status:a', 60_000, 3, 2)).toEqual({ count: 3, resetMs: 59_000 });
    expect(store.hit('status:b', 60_000, 3).count).toBe(1);
    clock.advance(59_000);
    expect(store.hit('status:a', 60_000, 3).count).toBe(1);
    store.close();
  });

  it('keeps at most its cap of client windows within one window, the least recently seen going first', () => {
    const clock = new FakeClock();
    const store = new MemoryRateLimitStore(() => clock.now(), { maxClients: 100 });
    flood(store, 50);
    expect(store.size).toBeLessThanOrEqual(100);
    // A client in steady use keeps its count through the flood.
    expect(store.hit('status:steady', 60_000, 1_000).count).toBe(22);
    store.close();
  });

  it('bounded by bytes (its share of CACHE_MEMORY_MB), keeps the windows that fit, the least recently seen going first', () => {
    const clock = new FakeClock();
    // About 190 bytes a window for keys of this length: room for some 50.
    const store = new MemoryRateLimitStore(() => clock.now(), { maxBytes: 10_000 });
    flood(store, 20);
    expect(store.size).toBeGreaterThan(40);
    expect(store.size).toBeLessThanOrEqual(60);
    expect(store.hit('status:steady', 60_000, 1_000).count).toBe(52);
    // A client not seen since the flood began was let go: it starts again.
    expect(store.hit('status:flood0', 60_000, 1_000).count).toBe(1);
    store.close();
  });
});
