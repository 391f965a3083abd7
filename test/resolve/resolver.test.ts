/**
 * TargetResolver against the real dnsmasq on 127.0.0.1:5353 (scripts/services.sh, zone in
 * test/fixtures/dnsmasq.conf). Every record in the zone is a loopback address, and every socket
 * these tests open is on loopback.
 */
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HostNotFoundError, ProbeError, TargetRefusedError } from '../../src/core/errors.js';
import type { QueryMode } from '../../src/core/types.js';
import { buildApp } from '../../src/http/app.js';
import { AddressGuard, TargetResolver, parseAddress, type ResolvedTarget } from '../../src/resolve/index.js';
import { createStatusService } from '../../src/status/index.js';
import { testConfig } from '../support/app.js';
import { FakeClock } from '../support/clock.js';
import { DNS_SERVER, LOOPBACK_ALLOWLIST } from '../support/services.js';

const open = new AddressGuard(LOOPBACK_ALLOWLIST);
const strict = new AddressGuard([]);
const resolver = new TargetResolver({ dnsServers: [DNS_SERVER], guard: open });
const guarded = new TargetResolver({ dnsServers: [DNS_SERVER], guard: strict });

function deadline(): AbortSignal {
  return AbortSignal.timeout(10_000);
}

function resolve(address: string, mode: QueryMode = 'java', by: TargetResolver = resolver): Promise<ResolvedTarget> {
  return by.resolve(parseAddress(address), mode, deadline());
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

async function probeFailure(promise: Promise<unknown>): Promise<string> {
  const error = await failure(promise);
  expect(error).toBeInstanceOf(ProbeError);
  return (error as ProbeError).code;
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

describe('TargetResolver: records of the test zone (allowlist 127.0.0.0/8, ::1/128)', () => {
  it('resolves A', async () => {
    expect(await resolve('mc.observer.test')).toEqual({
      host: 'mc.observer.test',
      port: 25565,
      ips: ['127.0.0.1'],
      srvRecord: null,
    });
  });

  it('resolves AAAA', async () => {
    expect(await resolve('v6.observer.test:25570')).toEqual({
      host: 'v6.observer.test',
      port: 25570,
      ips: ['::1'],
      srvRecord: null,
    });
  });

  it('returns A answers before AAAA answers', async () => {
    expect((await resolve('dual.observer.test')).ips).toEqual(['127.0.0.1', '::1']);
  });

  it('returns every A answer', async () => {
    expect((await resolve('multi.observer.test')).ips.slice().sort()).toEqual(['127.0.0.3', '127.0.0.4']);
  });

  it('follows a CNAME', async () => {
    expect((await resolve('alias.observer.test')).ips).toEqual(['127.0.0.1']);
  });

  it('uses a case-folded name with its trailing dot dropped', async () => {
    expect((await resolve('MC.Observer.TEST.')).ips).toEqual(['127.0.0.1']);
  });

  it.each(['java', 'legacy'] as const)('follows _minecraft._tcp SRV to a name in %s mode', async (mode) => {
    expect(await resolve('srv.observer.test', mode)).toEqual({
      host: 'mc.observer.test',
      port: 25599,
      ips: ['127.0.0.1'],
      srvRecord: { name: '_minecraft._tcp.srv.observer.test', target: 'mc.observer.test', port: 25599, priority: 0, weight: 5 },
    });
  });

  it('does not look up SRV when a port is given', async () => {
    const target = await resolve('srvboth.observer.test:30000');
    expect(target).toEqual({ host: 'srvboth.observer.test', port: 30000, ips: ['127.0.0.2'], srvRecord: null });
    // srv.observer.test has only the SRV record: with a port there is nothing to resolve.
    expect(await failure(resolve('srv.observer.test:25565'))).toBeInstanceOf(HostNotFoundError);
  });

  it('does not look up SRV in Bedrock mode', async () => {
    const target = await resolve('srvboth.observer.test', 'bedrock');
    expect(target).toEqual({ host: 'srvboth.observer.test', port: 19132, ips: ['127.0.0.2'], srvRecord: null });
    expect(await failure(resolve('srv.observer.test', 'bedrock'))).toBeInstanceOf(HostNotFoundError);
  });

  it('prefers the SRV record over the name’s own A record in Java mode', async () => {
    const target = await resolve('srvboth.observer.test');
    expect(target.host).toBe('mc.observer.test');
    expect(target.port).toBe(25599);
    expect(target.ips).toEqual(['127.0.0.1']);
  });

  it('chooses the SRV record with the lowest priority, then the highest weight', async () => {
    expect(await resolve('srvmulti.observer.test')).toEqual({
      host: 'dual.observer.test',
      port: 25603,
      ips: ['127.0.0.1', '::1'],
      srvRecord: { name: '_minecraft._tcp.srvmulti.observer.test', target: 'dual.observer.test', port: 25603, priority: 0, weight: 50 },
    });
  });

  it('resolves IP literals without DNS, with the mode’s default port', async () => {
    expect(await resolve('127.0.0.1')).toEqual({ host: '127.0.0.1', port: 25565, ips: ['127.0.0.1'], srvRecord: null });
    expect(await resolve('[::1]', 'bedrock')).toEqual({ host: '::1', port: 19132, ips: ['::1'], srvRecord: null });
    expect(await resolve('[::ffff:127.0.0.1]:25570')).toMatchObject({ ips: ['::ffff:7f00:1'], port: 25570 });
  });
});

describe('TargetResolver: names without records', () => {
  it.each(['java', 'bedrock'] as const)('NXDOMAIN is HostNotFoundError (404) in %s mode', async (mode) => {
    const error = await failure(resolve('missing.observer.test', mode));
    expect(error).toBeInstanceOf(HostNotFoundError);
    expect((error as HostNotFoundError).statusCode).toBe(404);
  });

  it('a name with only a TXT record is HostNotFoundError', async () => {
    expect(await failure(resolve('empty.observer.test'))).toBeInstanceOf(HostNotFoundError);
    expect(await failure(resolve('empty.observer.test:25565'))).toBeInstanceOf(HostNotFoundError);
  });

  it('an SRV target without addresses is dns_not_found, not a 404', async () => {
    expect(await probeFailure(resolve('srvdangling.observer.test'))).toBe('dns_not_found');
  });

  it('an SRV record with target "." means the service is not available', async () => {
    expect(await probeFailure(resolve('srvnone.observer.test'))).toBe('srv_invalid');
  });
});

describe('TargetResolver: the public-address guard (no allowlist)', () => {
  it.each([
    'mc.observer.test',
    'v6.observer.test',
    'dual.observer.test',
    'alias.observer.test',
    'srv.observer.test',
    '127.0.0.1:25565',
    '[::1]:25565',
    '[::ffff:127.0.0.1]',
  ])('refuses %s, which is loopback', async (address) => {
    const error = await failure(resolve(address, 'java', guarded));
    expect(error).toBeInstanceOf(TargetRefusedError);
    expect((error as TargetRefusedError).statusCode).toBe(400);
  });

  it('refuses a name when any one of its answers is not allowed', async () => {
    const onlyV4Loopback = new TargetResolver({ dnsServers: [DNS_SERVER], guard: new AddressGuard(['127.0.0.0/8']) });
    expect((await resolve('mc.observer.test', 'java', onlyV4Loopback)).ips).toEqual(['127.0.0.1']);
    // dual has 127.0.0.1 (allowed) and ::1 (not allowed): the whole name is refused.
    expect(await failure(resolve('dual.observer.test', 'java', onlyV4Loopback))).toBeInstanceOf(TargetRefusedError);
    expect(await failure(resolve('srvmulti.observer.test', 'java', onlyV4Loopback))).toBeInstanceOf(TargetRefusedError);
  });

  it('a still-missing name stays a 404 under the guard', async () => {
    expect(await failure(resolve('missing.observer.test', 'java', guarded))).toBeInstanceOf(HostNotFoundError);
  });

  describe('a TCP server on loopback', () => {
    let server: Server;
    let connections = 0;
    let port = 0;

    async function listen(): Promise<void> {
      connections = 0;
      server = createServer((socket) => {
        connections += 1;
        socket.destroy();
      });
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      port = (server.address() as AddressInfo).port;
      cleanups.push(() => new Promise<void>((done) => server.close(() => done())));
    }

    /** What the status service does: resolve, then connect to the first checked IP. */
    async function resolveAndConnect(address: string, by: TargetResolver): Promise<void> {
      const target = await by.resolve(parseAddress(address), 'java', deadline());
      const socket = connect({ host: target.ips[0]!, port: target.port });
      await once(socket, 'connect');
      socket.destroy();
    }

    it('sees one connection when the allowlist lets the name through (control)', async () => {
      await listen();
      const accepted = once(server, 'connection');
      await resolveAndConnect(`mc.observer.test:${port}`, resolver);
      await accepted;
      expect(connections).toBe(1);
    });

    it('sees zero connections when the guard refuses the name', async () => {
      await listen();
      for (const address of [`mc.observer.test:${port}`, `alias.observer.test:${port}`, `127.0.0.1:${port}`]) {
        expect(await failure(resolveAndConnect(address, guarded))).toBeInstanceOf(TargetRefusedError);
      }
      expect(connections).toBe(0);
      // The listener is live and counting: a loopback connection made now is seen, and would
      // have been queued behind any connection an earlier step had begun.
      const accepted = once(server, 'connection');
      const probe = connect({ host: '127.0.0.1', port });
      await once(probe, 'connect');
      probe.destroy();
      await accepted;
      expect(connections).toBe(1); // only the probe above
    });
  });
});

describe('TargetResolver: DNS failures and the deadline', () => {
  /** A UDP "DNS server" on loopback; `answer` builds the reply to a query, or null to stay silent. */
  async function fakeDns(answer: (query: Buffer) => Buffer | null): Promise<{ server: string; queries: () => number }> {
    const socket: UdpSocket = createSocket('udp4');
    let queries = 0;
    socket.on('message', (query, peer) => {
      queries += 1;
      const reply = answer(query);
      if (reply !== null) socket.send(reply, peer.port, peer.address);
    });
    socket.bind(0, '127.0.0.1');
    await once(socket, 'listening');
    cleanups.push(() => new Promise<void>((done) => socket.close(() => done())));
    return { server: `127.0.0.1:${socket.address().port}`, queries: () => queries };
  }

  /** RFC 1035 §4.1.1: echo the query with QR=1 and RCODE=2 (SERVFAIL). */
  function servfail(query: Buffer): Buffer {
    const reply = Buffer.from(query);
    reply[2] = 0x80 | (query[2]! & 0x79); // QR=1, keep opcode and RD
    reply[3] = 0x80 | 0x02; // RA=1, RCODE=SERVFAIL
    return reply;
  }

  it('a server answering SERVFAIL is dns_failure', async () => {
    const dns = await fakeDns(servfail);
    const by = new TargetResolver({ dnsServers: [dns.server], guard: open, timeoutMs: 500, tries: 1 });
    expect(await probeFailure(resolve('mc.observer.test', 'java', by))).toBe('dns_failure');
    expect(await probeFailure(resolve('mc.observer.test', 'bedrock', by))).toBe('dns_failure');
    expect(dns.queries()).toBeGreaterThan(0);
  });

  /** The question's QTYPE (RFC 1035 §4.1.2): after the QNAME labels that start at byte 12. */
  function qtype(query: Buffer): number {
    let at = 12;
    while (query[at]! !== 0) at += query[at]! + 1;
    return query.readUInt16BE(at + 1);
  }

  /** An answer with `ipv4` as the one A record (RFC 1035 §4.1.3), or no answer for other types. */
  function answerA(query: Buffer, ipv4: string): Buffer {
    let end = 12;
    while (query[end]! !== 0) end += query[end]! + 1;
    end += 5;
    const header = Buffer.from(query.subarray(0, 12));
    header[2] = 0x80 | (query[2]! & 0x79);
    header[3] = 0x80; // RA=1, NOERROR
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(qtype(query) === 1 ? 1 : 0, 6);
    header.writeUInt16BE(0, 8);
    header.writeUInt16BE(0, 10);
    const question = query.subarray(12, end);
    if (qtype(query) !== 1) return Buffer.concat([header, question]);
    const record = Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, ...ipv4.split('.').map(Number)]);
    return Buffer.concat([header, question, record]);
  }

  /** NXDOMAIN (RCODE=3) for every query. */
  function nxdomain(query: Buffer): Buffer {
    const reply = Buffer.from(query);
    reply[2] = 0x80 | (query[2]! & 0x79);
    reply[3] = 0x80 | 0x03;
    return reply;
  }

  it('a failed SRV look-up (SERVFAIL) falls back to the name’s A record, as the vanilla client does', async () => {
    const dns = await fakeDns((query) => (qtype(query) === 33 ? servfail(query) : answerA(query, '127.0.0.1')));
    const by = new TargetResolver({ dnsServers: [dns.server], guard: open, timeoutMs: 500, tries: 1 });
    const target = await resolve('mc.observer.test', 'java', by);
    expect(target).toEqual({ host: 'mc.observer.test', port: 25565, ips: ['127.0.0.1'], srvRecord: null });
  });

  it('an SRV look-up that times out falls back to the name’s A record', async () => {
    const dns = await fakeDns((query) => (qtype(query) === 33 ? null : answerA(query, '127.0.0.1')));
    const by = new TargetResolver({ dnsServers: [dns.server], guard: open, timeoutMs: 200, tries: 1 });
    expect((await resolve('mc.observer.test', 'java', by)).ips).toEqual(['127.0.0.1']);
  });

  it.each([
    ['SERVFAIL', servfail],
    ['no answer (timeout)', () => null],
  ] as const)('an SRV look-up failing with %s, then no A/AAAA: a DNS failure, not a 404, and not remembered', async (_, srvReply) => {
    const dns = await fakeDns((query) => (qtype(query) === 33 ? srvReply(query) : nxdomain(query)));
    let now = 1_000_000;
    const by = new TargetResolver({ dnsServers: [dns.server], guard: open, timeoutMs: 200, tries: 1, now: () => now });
    expect(await probeFailure(resolve('gone.observer.test', 'java', by))).toBe('dns_failure');
    const asked = dns.queries();
    now += 1_000;
    // Asked again: the SRV record may exist, the name is not remembered as missing.
    expect(await probeFailure(resolve('gone.observer.test', 'java', by))).toBe('dns_failure');
    expect(dns.queries()).toBeGreaterThan(asked);
    // Bedrock asks no SRV: there the same answers are a plain 404.
    expect(await failure(resolve('gone.observer.test', 'bedrock', by))).toBeInstanceOf(HostNotFoundError);
  });

  it('through the status service, that case answers online: false with the DNS error (a 200, not a 404)', async () => {
    const dns = await fakeDns((query) => (qtype(query) === 33 ? servfail(query) : nxdomain(query)));
    const status = createStatusService({
      config: testConfig({ DNS_SERVERS: dns.server, STATUS_CACHE_TTL: '1' }),
      clock: new FakeClock(),
      icmp: null,
    });
    const answer = await status.lookup('gone.observer.test', 'java');
    expect(answer.status).toMatchObject({ online: false, error: 'DNS lookup failed' });
  });

  it('remembers a name without records for 30 s: repeats ask DNS nothing', async () => {
    const dns = await fakeDns(nxdomain);
    let now = 1_000_000;
    const by = new TargetResolver({ dnsServers: [dns.server], guard: open, timeoutMs: 500, tries: 1, now: () => now });
    expect(await failure(resolve('gone.observer.test', 'java', by))).toBeInstanceOf(HostNotFoundError);
    const asked = dns.queries();
    expect(asked).toBeGreaterThanOrEqual(3); // SRV, A, AAAA
    now += 29_000;
    expect(await failure(resolve('gone.observer.test', 'java', by))).toBeInstanceOf(HostNotFoundError);
    expect(await failure(resolve('GONE.observer.test.', 'java', by))).toBeInstanceOf(HostNotFoundError);
    expect(dns.queries()).toBe(asked);
    // Bedrock does not use SRV: its answer is its own.
    expect(await failure(resolve('gone.observer.test', 'bedrock', by))).toBeInstanceOf(HostNotFoundError);
    const withBedrock = dns.queries();
    expect(withBedrock).toBeGreaterThan(asked);
    now += 2_000;
    expect(await failure(resolve('gone.observer.test', 'java', by))).toBeInstanceOf(HostNotFoundError);
    expect(dns.queries()).toBeGreaterThan(withBedrock);
  });

  it('does not remember DNS failures as missing names', async () => {
    const dns = await fakeDns(servfail);
    const by = new TargetResolver({ dnsServers: [dns.server], guard: open, timeoutMs: 500, tries: 1 });
    expect(await probeFailure(resolve('mc.observer.test', 'bedrock', by))).toBe('dns_failure');
    const asked = dns.queries();
    expect(await probeFailure(resolve('mc.observer.test', 'bedrock', by))).toBe('dns_failure');
    expect(dns.queries()).toBeGreaterThan(asked);
  });

  it('a server that never answers within its timeout is dns_failure', async () => {
    const dns = await fakeDns(() => null);
    const by = new TargetResolver({ dnsServers: [dns.server], guard: open, timeoutMs: 200, tries: 1 });
    expect(await probeFailure(resolve('mc.observer.test', 'bedrock', by))).toBe('dns_failure');
  });

  it('aborting the query signal cancels the look-up: timeout', async () => {
    const dns = await fakeDns(() => null);
    // The DNS timeout is longer than the test timeout: only the abort can end this look-up.
    const by = new TargetResolver({ dnsServers: [dns.server], guard: open, timeoutMs: 120_000, tries: 1 });
    const controller = new AbortController();
    const pending = by.resolve(parseAddress('mc.observer.test'), 'java', controller.signal);
    while (dns.queries() === 0) await new Promise((done) => setTimeout(done, 10));
    controller.abort();
    expect(await probeFailure(pending)).toBe('timeout');
  });

  it('an already aborted signal is a timeout before any look-up', async () => {
    const dns = await fakeDns(() => null);
    const by = new TargetResolver({ dnsServers: [dns.server], guard: open });
    const signal = AbortSignal.abort();
    expect(await probeFailure(by.resolve(parseAddress('mc.observer.test'), 'java', signal))).toBe('timeout');
    expect(await probeFailure(by.resolve(parseAddress('127.0.0.1'), 'java', signal))).toBe('timeout');
    expect(dns.queries()).toBe(0);
  });

  it('checks its options when built', () => {
    expect(() => new TargetResolver({ dnsServers: ['not an ip'], guard: open })).toThrow();
    expect(() => new TargetResolver({ dnsServers: [], guard: open, timeoutMs: 0 })).toThrow(TypeError);
    expect(() => new TargetResolver({ dnsServers: ['[::1]:5353', '127.0.0.1'], guard: open })).not.toThrow();
  });
});

describe('TargetResolver: special-use names (RFC 6761), answered without DNS', () => {
  /** A DNS server on loopback that answers NXDOMAIN to everything and counts what it is asked. */
  async function countingDns(): Promise<{ server: string; questions: string[] }> {
    const socket: UdpSocket = createSocket('udp4');
    const questions: string[] = [];
    socket.on('message', (query, peer) => {
      const labels: string[] = [];
      for (let at = 12; query[at]! !== 0; at += query[at]! + 1) labels.push(query.toString('latin1', at + 1, at + 1 + query[at]!));
      questions.push(labels.join('.'));
      const reply = Buffer.from(query);
      reply[2] = 0x80 | (query[2]! & 0x79);
      reply[3] = 0x80 | 0x03;
      socket.send(reply, peer.port, peer.address);
    });
    socket.bind(0, '127.0.0.1');
    await once(socket, 'listening');
    cleanups.push(() => new Promise<void>((done) => socket.close(() => done())));
    return { server: `127.0.0.1:${socket.address().port}`, questions };
  }

  it('answers localhost and *.localhost as loopback, which the guard checks, and .invalid names as missing; nothing is asked', async () => {
    const dns = await countingDns();
    const allowing = new TargetResolver({ dnsServers: [dns.server], guard: open, timeoutMs: 500, tries: 1 });
    const refusing = new TargetResolver({ dnsServers: [dns.server], guard: strict, timeoutMs: 500, tries: 1 });
    for (const name of ['localhost', 'LocalHost.', 'mc.localhost', 'a.b.localhost']) {
      expect(await resolve(name, 'java', allowing)).toEqual({ host: name.toLowerCase().replace(/\.$/, ''), port: 25565, ips: ['127.0.0.1', '::1'], srvRecord: null });
      expect(await resolve(`${name.replace(/\.$/, '')}:19132`, 'bedrock', allowing)).toMatchObject({ port: 19132, ips: ['127.0.0.1', '::1'] });
      expect(await failure(resolve(name, 'java', refusing))).toBeInstanceOf(TargetRefusedError);
    }
    for (const name of ['invalid', 'x.invalid', 'A.B.INVALID.']) {
      expect(await failure(resolve(name, 'java', allowing))).toBeInstanceOf(HostNotFoundError);
      expect(await failure(resolve(`${name.replace(/\.$/, '')}:25565`, 'bedrock', allowing))).toBeInstanceOf(HostNotFoundError);
    }
    expect(await allowing.txt('_observer.mc.localhost', deadline())).toEqual([]);
    expect(await allowing.cname('x.invalid', deadline())).toBeNull();
    expect(dns.questions).toEqual([]);
    // A name under .test is asked like any other: the server counts.
    expect(await failure(resolve('gone.observer.test', 'bedrock', allowing))).toBeInstanceOf(HostNotFoundError);
    expect(dns.questions).toContain('gone.observer.test');
  });

  it('through the status route: localhost is refused as a non-public target and x.invalid is a 404, with no DNS query', async () => {
    const dns = await countingDns();
    const config = testConfig({ DNS_SERVERS: dns.server, TARGET_ALLOWLIST: '' });
    const app = await buildApp({ config, status: createStatusService({ config, clock: new FakeClock(), icmp: null }), logger: false });
    cleanups.push(() => app.close());
    const localhost = await app.inject('/api/v1/status/localhost');
    expect([localhost.statusCode, localhost.json().error]).toEqual([400, 'target_refused']);
    const sub = await app.inject('/api/v1/status/play.localhost:25565?bedrock=true');
    expect([sub.statusCode, sub.json().error]).toEqual([400, 'target_refused']);
    const invalid = await app.inject('/api/v1/status/server.invalid');
    expect([invalid.statusCode, invalid.json().error]).toEqual([404, 'host_not_found']);
    expect(dns.questions).toEqual([]);
  });
});
