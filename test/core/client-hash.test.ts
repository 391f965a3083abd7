import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ClientHasher, type DailySecretSource } from '../../src/core/client-hash.js';
import { FakeClock } from '../support/clock.js';

describe('ClientHasher (memoised per address)', () => {
  it('gives one address one opaque key all day, and a new one the next day', () => {
    const clock = new FakeClock();
    const hasher = new ClientHasher(clock);
    const first = hasher.hash('203.0.113.7');
    expect(first).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(first).not.toContain('203.0.113.7');
    expect(hasher.hash('203.0.113.7')).toBe(first);
    expect(hasher.hash('203.0.113.8')).not.toBe(first);
    // IPv6 clients are grouped by /64, IPv4-mapped addresses count as their IPv4 address.
    expect(hasher.hash('2001:db8:1:2::1')).toBe(hasher.hash('2001:db8:1:2:ffff::9'));
    expect(hasher.hash('::ffff:203.0.113.7')).toBe(first);

    clock.advance(24 * 60 * 60_000);
    const nextDay = hasher.hash('203.0.113.7');
    expect(nextDay).not.toBe(first);
    expect(hasher.hash('203.0.113.7')).toBe(nextDay);
  });

  it('counts a client for trends and new servers (lookupKey) by IPv6 /48, for rate limits (hash) by /64', () => {
    const hasher = new ClientHasher(new FakeClock());
    const a = '2001:db8:aa:1::1';
    const b = '2001:db8:aa:ffff::2';
    expect(hasher.hash(a)).not.toBe(hasher.hash(b));
    expect(hasher.lookupKey(a)).toBe(hasher.lookupKey(b));
    expect(hasher.lookupKey('2001:db8:ab::1')).not.toBe(hasher.lookupKey(a));
    expect(hasher.lookupKey(a)).toMatch(/^[A-Za-z0-9_-]{22}$/);
    // IPv4: one address is one client either way.
    expect(hasher.lookupKey('203.0.113.7')).not.toBe(hasher.lookupKey('203.0.113.8'));
    expect(hasher.lookupKey('::ffff:203.0.113.7')).toBe(hasher.lookupKey('203.0.113.7'));
  });

  it('keeps the memo within its bound, the addresses in steady use staying in it', () => {
    const hasher = new ClientHasher(new FakeClock());
    hasher.hash('198.51.100.1');
    for (let i = 0; i < 30_000; i++) {
      hasher.hash(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
      if (i % 1_000 === 0) hasher.hash('198.51.100.1');
    }
    expect(hasher.memoSize).toBeLessThanOrEqual(10_000);
    expect(hasher.isMemoised('198.51.100.1')).toBe(true);
  });

  it('stays correct past the memo bound', () => {
    const hasher = new ClientHasher(new FakeClock());
    const key = hasher.hash('198.51.100.1');
    for (let i = 0; i < 12_000; i++) hasher.hash(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    expect(hasher.hash('198.51.100.1')).toBe(key);
  });

  it('drops keys made with the local secret once the shared secret arrives', async () => {
    let deliver: (secret: string) => void = () => {};
    const source: DailySecretSource = { secretFor: () => new Promise((resolve) => (deliver = resolve)) };
    const clock = new FakeClock();
    const early = new ClientHasher(clock, source);
    const before = early.hash('203.0.113.9');
    const ready = early.ready();
    deliver('shared secret of the day');
    await ready;
    const after = early.hash('203.0.113.9');
    expect(after).not.toBe(before);

    // Another instance with the same shared secret computes the same key.
    const other = new ClientHasher(clock, { secretFor: async () => 'shared secret of the day' });
    await other.ready();
    expect(other.hash('203.0.113.9')).toBe(after);
  });

  it("keeps a connection's keys while its address and the day stay, and makes them again when either changes", () => {
    const clock = new FakeClock();
    const hasher = new ClientHasher(clock);
    const connection = {};
    const first = hasher.keysOf(connection, '203.0.113.7');
    expect(first.key).toBe(hasher.hash('203.0.113.7'));
    expect(first.lookupKey).toBe(hasher.lookupKey('203.0.113.7'));
    // The same keys, not worked out again, for the connection's next request.
    expect(hasher.keysOf(connection, '203.0.113.7')).toBe(first);
    // A proxy's connection carries another client: that client's keys.
    const proxied = hasher.keysOf(connection, '198.51.100.4');
    expect(proxied.key).toBe(hasher.hash('198.51.100.4'));
    expect(proxied.key).not.toBe(first.key);
    // Another connection of the first client: the same keys.
    expect(hasher.keysOf({}, '203.0.113.7')).toEqual(first);

    clock.advance(24 * 60 * 60_000);
    const nextDay = hasher.keysOf(connection, '198.51.100.4');
    expect(nextDay.key).not.toBe(proxied.key);
    expect(nextDay.key).toBe(hasher.hash('198.51.100.4'));
    expect(nextDay.lookupKey).toBe(hasher.lookupKey('198.51.100.4'));
  });

  it("makes a connection's keys again once the shared secret arrives", async () => {
    let deliver: (secret: string) => void = () => {};
    const hasher = new ClientHasher(new FakeClock(), { secretFor: () => new Promise((resolve) => (deliver = resolve)) });
    const connection = {};
    const early = hasher.keysOf(connection, '203.0.113.9');
    const ready = hasher.ready();
    deliver('shared secret of the day');
    await ready;
    const later = hasher.keysOf(connection, '203.0.113.9');
    expect(later.key).not.toBe(early.key);
    expect(later.key).toBe(hasher.hash('203.0.113.9'));
  });

  it('is HMAC-SHA256 of the client network keyed with the day\'s secret (README "Rate limits")', async () => {
    const secret = 'shared secret of the day';
    const hasher = new ClientHasher(new FakeClock(), { secretFor: async () => secret });
    await hasher.ready();
    const hmac = (network: string) => createHmac('sha256', secret).update(network).digest('base64url').slice(0, 22);
    expect(hasher.hash('203.0.113.7')).toBe(hmac('203.0.113.7'));
    expect(hasher.hash('::ffff:203.0.113.7')).toBe(hmac('203.0.113.7'));
    expect(hasher.hash('2001:db8:1:2:ffff::9')).toBe(hmac('2001:db8:1:2::/64'));
  });
});
