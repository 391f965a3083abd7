/**
 * Bounded fan-out (docs/hostile-clients.md): a name with many addresses makes one look-up try
 * one address per family first, then the next, up to LOOKUP_MAX_ADDRESSES. The names live in a
 * private dnsmasq (test/support/dns.ts): dnsmasq shuffles A records between answers, so the
 * tests check families and counts, not which IPv4 address comes first.
 */
import { isIPv4 } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { QueryMode } from '../../src/core/types.js';
import { MemoryRateLimitStore } from '../../src/http/rate-limit.js';
import { pingJava } from '../../src/protocol/index.js';
import { AddressGuard, TargetResolver, parseAddress } from '../../src/resolve/index.js';
import { TargetBudget } from '../../src/status/budgets.js';
import { createStatusService, MemoryStatusCache, StatusService, type ProbeTarget, type StatusServiceDeps } from '../../src/status/index.js';
import { testConfig } from '../support/app.js';
import { FakeClock } from '../support/clock.js';
import { startPrivateDns, type PrivateDns } from '../support/dns.js';
import { freePort } from '../../scripts/ports.mjs';
import { startJavaServer } from '../support/minecraft.js';
import { LOOPBACK_ALLOWLIST } from '../support/services.js';

/** Six IPv4 addresses and one IPv6 address; `dual.fan.test` one of each. */
const ZONE = [
  ...[21, 22, 23, 24, 25, 26].map((n) => `host-record=many.fan.test,127.0.0.${n}`),
  'host-record=many.fan.test,::1',
  'host-record=dual.fan.test,127.0.0.21,::1',
];

let dns: PrivateDns;
beforeAll(async () => {
  dns = await startPrivateDns(ZONE);
});
afterAll(async () => {
  await dns.close();
});

const guard = new AddressGuard(LOOPBACK_ALLOWLIST);

function resolver(maxAddresses?: number) {
  return new TargetResolver({ dnsServers: [dns.server], guard, ...(maxAddresses === undefined ? {} : { maxAddresses }) });
}

describe('TargetResolver: addresses to try', () => {
  it('puts one address per family first and keeps at most 4 by default', async () => {
    const { ips } = await resolver().resolve(parseAddress('many.fan.test:25565'), 'java', AbortSignal.timeout(5000));
    expect(ips).toHaveLength(4);
    expect(isIPv4(ips[0]!)).toBe(true);
    expect(ips[1]).toBe('::1');
    expect(ips.slice(2).every((ip) => isIPv4(ip))).toBe(true);
    expect(new Set(ips).size).toBe(4);
  });

  it('keeps one address when the cap is 1', async () => {
    const { ips } = await resolver(1).resolve(parseAddress('many.fan.test:25565'), 'java', AbortSignal.timeout(5000));
    expect(ips).toHaveLength(1);
    expect(isIPv4(ips[0]!)).toBe(true);
  });

  it('refuses a cap outside 1-4', () => {
    expect(() => resolver(0)).toThrow(TypeError);
    expect(() => resolver(5)).toThrow(TypeError);
  });
});

/** A status service over the private zone whose Java pings are real and noted in `tried`. */
function spied(clock: FakeClock, extra: Partial<StatusServiceDeps> = {}) {
  const tried: string[] = [];
  const spy = (target: ProbeTarget) => {
    tried.push(target.ip);
    return pingJava(target);
  };
  const status = new StatusService({
    resolver: resolver(),
    ping: { java: spy, legacy: spy, bedrock: spy } satisfies Record<QueryMode, typeof spy>,
    cache: new MemoryStatusCache(),
    clock,
    ttlSeconds: 60,
    pingTimeoutMs: 5000,
    maxConcurrentPings: 10,
    ...extra,
  });
  return { status, tried };
}

describe('StatusService: one look-up of a name with many addresses', () => {
  it('knocks on at most 4 of them when each refuses', async () => {
    const port = await freePort();
    const { status, tried } = spied(new FakeClock());
    const answer = await status.lookup(`many.fan.test:${port}`, 'java');
    expect(answer.status).toMatchObject({ online: false, error: 'connection refused' });
    expect(tried).toHaveLength(4);
    expect(tried[1]).toBe('::1');
  });

  it("skips a next address whose IP has had its pings of the minute (TARGET_PINGS_PER_MINUTE)", async () => {
    const port = await freePort();
    const clock = new FakeClock();
    const counter = new MemoryRateLimitStore(() => clock.now());
    try {
      const { status, tried } = spied(clock, { targetBudget: new TargetBudget(counter, 1) });
      await status.lookup(`[::1]:${port}`, 'java');
      const answer = await status.lookup(`dual.fan.test:${port}`, 'java');
      expect(answer.status).toMatchObject({ online: false, error: 'connection refused' });
      expect(tried).toEqual(['::1', '127.0.0.21']);
    } finally {
      counter.close();
    }
  });

  it('LOOKUP_MAX_ADDRESSES=1 tries only the first address; 2 reaches the other family', async () => {
    const server = await startJavaServer({ host: '::1', motd: 'v6 only' });
    try {
      const lookup = (max: string) =>
        createStatusService({ config: testConfig({ DNS_SERVERS: dns.server, LOOKUP_MAX_ADDRESSES: max }), clock: new FakeClock(), icmp: null }).lookup(
          `dual.fan.test:${server.port}`,
          'java',
        );
      expect((await lookup('1')).status).toMatchObject({ online: false, error: 'connection refused', ip_address: '127.0.0.21' });
      expect((await lookup('2')).status).toMatchObject({ online: true, ip_address: '::1' });
    } finally {
      await server.close();
    }
  });
});
