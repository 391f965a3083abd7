/**
 * Turns a parsed address into the checked IPs to contact: SRV (Java and legacy), then A and
 * AAAA, each answer through the public-address guard. The caller connects to `ips` as they
 * are, in order, and never resolves the name again (docs/api.md, "Addresses").
 *
 * Outcomes:
 *  - the name has no SRV, A or AAAA record (NXDOMAIN or NODATA): HostNotFoundError (404),
 *    remembered for `negativeTtlMs` (30 s) so that repeats do not redo three look-ups;
 *  - any address of the name is refused by the guard: TargetRefusedError (400), even when
 *    other answers are public;
 *  - the query's signal aborts: ProbeError('timeout');
 *  - a failed SRV look-up (SERVFAIL, REFUSED, timeout) falls back to the name's own A/AAAA,
 *    as the vanilla client does (it treats any SRV failure as "no SRV record"); when the name
 *    then has no A/AAAA either, it is a DNS failure, not a 404, and is not remembered: the SRV
 *    record may well exist;
 *  - the DNS servers fail for the addresses too: ProbeError('dns_failure'); an SRV target
 *    without addresses: ProbeError('dns_not_found'); SRV records none of which can be used
 *    (target "." or port 0, or a target that is not a host name): ProbeError('srv_invalid').
 *    These ProbeErrors are offline results for the status service, not HTTP errors.
 *
 * Special-use names are answered without asking DNS (RFC 6761): `localhost` and `*.localhost`
 * are loopback (127.0.0.1 and ::1, no SRV or TXT record), which the guard then checks like any
 * other answer; `invalid` and `*.invalid` have no records. Nothing about them is sent to a DNS
 * server, which could answer otherwise.
 *
 * Order of `ips` (connectionOrder): one address per family first, IPv4 then IPv6, then the
 * families alternate (RFC 8305 §4), each in the order the DNS server gave, cut to
 * `maxAddresses` (LOOKUP_MAX_ADDRESSES). IPv4 first is what the vanilla Java client does (Java
 * prefers IPv4 by default) and what Minecraft servers are most often reachable on. The cut
 * keeps one look-up of a name with many records from knocking on all of them
 * (docs/hostile-clients.md); the guard still checks every answer.
 */
import { promises as dns, type SrvRecord as DnsSrvRecord } from 'node:dns';
import { isIPv4 } from 'node:net';
import { LRUCache } from 'lru-cache';
import { InvalidAddressError, HostNotFoundError, ProbeError, TargetRefusedError } from '../core/errors.js';
import type { QueryMode, SrvRecord } from '../core/types.js';
import { defaultPort, parseDnsName, type ParsedAddress } from './address.js';
import type { AddressGuard } from './guard.js';
import type { AbortLike } from '../core/deadline.js';
import { NO_TRACER, type Tracer } from '../core/tracing.js';

export interface ResolvedTarget {
  /** Host name for the handshake: the SRV target when SRV was used, as the vanilla client does. */
  host: string;
  /** The port to connect to: explicit, from SRV, or the mode's default. */
  port: number;
  /** Guard-checked IPs, in the order to try. Never empty. */
  ips: string[];
  srvRecord: SrvRecord | null;
}

export interface TargetResolverOptions {
  /** `ip`, `ip:port` or `[ipv6]:port`; empty means the system's resolv.conf servers. */
  dnsServers: readonly string[];
  guard: AddressGuard;
  /** Milliseconds c-ares waits for one answer before retrying; the query's signal bounds the total. */
  timeoutMs?: number;
  /** Attempts per server. */
  tries?: number;
  /** How long a name without records stays a 404 without asking DNS again (default 30 s; 0 turns it off). */
  negativeTtlMs?: number;
  /** Clock of the negative cache (ms). */
  now?: () => number;
  /** Addresses of one name returned to try, 1 to MAX_ADDRESSES_TRIED (default). */
  maxAddresses?: number;
  /** Bytes of names without records remembered at most (default NEGATIVE_CACHE_BYTES); part of CACHE_MEMORY_MB. */
  negativeCacheBytes?: number;
  /** A `status.guard` span for each check of a name's addresses; none without it. */
  tracer?: Tracer;
}

/** The most addresses of one name a look-up may try (LOOKUP_MAX_ADDRESSES allows 1 to this). */
export const MAX_ADDRESSES_TRIED = 4;

/** Bytes of names remembered as having no records, by default (least recently used go first). */
const NEGATIVE_CACHE_BYTES = 2 * 1024 * 1024;

/** The SRV service label of Minecraft Java Edition (Minecraft wiki, "Server.properties" / SRV). */
const MINECRAFT_SRV_PREFIX = '_minecraft._tcp.';

/** RFC 1035 §2.3.4: 255 octets on the wire, 253 characters of dotted text. */
const MAX_DNS_NAME_LENGTH = 253;

/** The addresses of `localhost` and its subdomains (RFC 6761 §6.3). */
const LOOPBACK_ADDRESSES = ['127.0.0.1', '::1'];

/** What RFC 6761 makes of a name: loopback (§6.3), no records (§6.4), or none of its business. */
export function specialUseName(name: string): 'loopback' | 'invalid' | null {
  const lower = name.toLowerCase().replace(/\.$/, '');
  if (lower === 'localhost' || lower.endsWith('.localhost')) return 'loopback';
  if (lower === 'invalid' || lower.endsWith('.invalid')) return 'invalid';
  return null;
}

/** c-ares codes meaning "this name has no such record" (NXDOMAIN, NODATA). */
const NO_RECORD_CODES = new Set(['ENOTFOUND', 'ENODATA']);

type Lookup<T> = { ok: true; value: T } | { ok: false; code: string | undefined; error: unknown };

export class TargetResolver {
  private readonly guard: AddressGuard;
  private readonly timeoutMs: number;
  private readonly tries: number;
  private readonly negativeTtlMs: number;
  private readonly now: () => number;
  private readonly maxAddresses: number;
  /** Key (mode's use of SRV + name) → when the "no records" answer expires. */
  private readonly notFound: LRUCache<string, number>;
  /** The c-ares channel every look-up shares. */
  private readonly channel: dns.Resolver;
  private readonly tracer: Tracer;

  constructor(opts: TargetResolverOptions) {
    this.guard = opts.guard;
    this.tracer = opts.tracer ?? NO_TRACER;
    // A key is at most a DNS name and a prefix, two bytes a character, plus the cache's slot.
    this.notFound = new LRUCache({ maxSize: opts.negativeCacheBytes ?? NEGATIVE_CACHE_BYTES, sizeCalculation: (_expires, key) => 2 * key.length + 64 });
    this.timeoutMs = opts.timeoutMs ?? 2000;
    this.tries = opts.tries ?? 2;
    this.negativeTtlMs = opts.negativeTtlMs ?? 30_000;
    this.now = opts.now ?? Date.now;
    this.maxAddresses = opts.maxAddresses ?? MAX_ADDRESSES_TRIED;
    if (!Number.isInteger(this.maxAddresses) || this.maxAddresses < 1 || this.maxAddresses > MAX_ADDRESSES_TRIED) {
      throw new TypeError(`maxAddresses must be a whole number from 1 to ${MAX_ADDRESSES_TRIED}`);
    }
    if (!Number.isInteger(this.timeoutMs) || this.timeoutMs < 1) throw new TypeError('timeoutMs must be a positive integer');
    if (!Number.isInteger(this.tries) || this.tries < 1) throw new TypeError('tries must be a positive integer');
    this.channel = new dns.Resolver({ timeout: this.timeoutMs, tries: this.tries });
    // Set now rather than on the first query: setServers throws on bad input.
    if (opts.dnsServers.length > 0) this.channel.setServers([...opts.dnsServers]);
  }

  async resolve(address: ParsedAddress, mode: QueryMode, signal: AbortLike): Promise<ResolvedTarget> {
    if (signal.aborted) throw new ProbeError('timeout', { cause: signal.reason });

    if (address.kind !== 'hostname') {
      this.check([address.host]);
      return { host: address.host, port: address.port ?? defaultPort(mode), ips: [address.host], srvRecord: null };
    }

    const special = specialUseName(address.host);
    if (special === 'invalid') throw new HostNotFoundError(address.host);
    if (special === 'loopback') {
      this.check(LOOPBACK_ADDRESSES);
      return { host: address.host, port: address.port ?? defaultPort(mode), ips: connectionOrder(LOOPBACK_ADDRESSES, this.maxAddresses), srvRecord: null };
    }

    const negativeKey = `${usesSrv(address, mode) ? 'srv' : 'addr'}|${address.host}`;
    const expires = this.notFound.get(negativeKey);
    if (expires !== undefined && this.now() < expires) throw new HostNotFoundError(address.host);

    // One shared c-ares channel, so that its UDP socket stays open across look-ups instead of
    // one socket per look-up. An aborted query stops waiting at once; its look-ups end on
    // their own within the channel's timeout and tries.
    let onAbort!: () => void;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(new ProbeError('timeout', { cause: signal.reason }));
    });
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await Promise.race([this.resolveName(this.channel, address, mode, signal), aborted]);
    } catch (error) {
      if (error instanceof HostNotFoundError && this.negativeTtlMs > 0) this.notFound.set(negativeKey, this.now() + this.negativeTtlMs);
      throw error;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  private async resolveName(
    resolver: dns.Resolver,
    address: ParsedAddress,
    mode: QueryMode,
    signal: AbortLike,
  ): Promise<ResolvedTarget> {
    const srvName = MINECRAFT_SRV_PREFIX + address.host;
    // The name's own A/AAAA are looked up alongside SRV so a missing SRV costs no extra round trip;
    // when SRV is used these answers are dropped unchecked, as nothing connects to them.
    const direct = this.lookupAddresses(resolver, address.host);
    // Marks the promise handled for the paths that return or throw without awaiting it.
    direct.catch(() => undefined);
    let srvFailure: Extract<Lookup<unknown>, { ok: false }> | null = null;
    if (usesSrv(address, mode)) {
      const srv = await settle(resolver.resolveSrv(srvName));
      throwIfAborted(signal);
      if (srv.ok && srv.value.length > 0) {
        return this.followSrv(resolver, srvName, srv.value, signal);
      }
      // No SRV record, or the SRV look-up failed (SERVFAIL, timeout): the name's own A/AAAA,
      // as the vanilla client does.
      if (!srv.ok && !NO_RECORD_CODES.has(srv.code ?? '')) srvFailure = srv;
    }
    const found = await direct;
    throwIfAborted(signal);
    if (found === 'no-records') {
      // Without an SRV answer we cannot tell that the name has no records: it may have an SRV
      // record the failed look-up did not return. A DNS failure then, not a (cached) 404.
      if (srvFailure !== null) throw dnsFailure(srvFailure.error);
      throw new HostNotFoundError(address.host);
    }
    this.check(found);
    return { host: address.host, port: address.port ?? defaultPort(mode), ips: connectionOrder(found, this.maxAddresses), srvRecord: null };
  }

  private async followSrv(
    resolver: dns.Resolver,
    srvName: string,
    records: DnsSrvRecord[],
    signal: AbortLike,
  ): Promise<ResolvedTarget> {
    const chosen = chooseSrv(records);
    if (chosen === null) {
      // Only "." targets (RFC 2782: the service is decidedly not available) or port 0.
      throw new ProbeError('srv_invalid');
    }
    const target = parseDnsName(chosen.name);
    if (target === null) throw new ProbeError('srv_invalid', { cause: new InvalidAddressError('bad SRV target') });
    const srvRecord: SrvRecord = {
      name: srvName,
      target: target.host,
      port: chosen.port,
      priority: chosen.priority,
      weight: chosen.weight,
    };
    let ips: string[];
    if (target.kind === 'hostname') {
      const found = await this.lookupAddresses(resolver, target.host);
      throwIfAborted(signal);
      // The user's name exists (it has an SRV record), so a dangling target is not a 404.
      if (found === 'no-records') throw new ProbeError('dns_not_found');
      ips = found;
    } else {
      ips = [target.host];
    }
    this.check(ips);
    return { host: target.host, port: chosen.port, ips: connectionOrder(ips, this.maxAddresses), srvRecord };
  }

  /**
   * A then AAAA answers of `name`, or 'no-records' when it has neither. Unchecked. When one
   * family answers and the other fails (say AAAA times out), the answers received are used.
   */
  private async lookupAddresses(resolver: dns.Resolver, name: string): Promise<string[] | 'no-records'> {
    const [v4, v6] = await Promise.all([settle(resolver.resolve4(name)), settle(resolver.resolve6(name))]);
    const ips = [...(v4.ok ? v4.value : []), ...(v6.ok ? v6.value : [])];
    if (ips.length > 0) return [...new Set(ips)];
    const failure = [v4, v6].find((r): r is Extract<Lookup<string[]>, { ok: false }> => !r.ok && !NO_RECORD_CODES.has(r.code ?? ''));
    if (failure !== undefined) throw dnsFailure(failure.error);
    return 'no-records';
  }

  /**
   * The TXT records of `name` (each record's strings joined), through the same DNS servers;
   * none when the name has no TXT record. A failing look-up is ProbeError('dns_failure').
   */
  async txt(name: string, signal: AbortLike): Promise<string[]> {
    if (specialUseName(name) !== null) return [];
    const answer = await Promise.race([
      settle(this.channel.resolveTxt(name)),
      new Promise<never>((_, reject) => {
        if (signal.aborted) reject(new ProbeError('timeout'));
        signal.addEventListener('abort', () => reject(new ProbeError('timeout')), { once: true });
      }),
    ]);
    if (answer.ok) return answer.value.map((chunks) => chunks.join(''));
    if (NO_RECORD_CODES.has(answer.code ?? '')) return [];
    throw dnsFailure(answer.error);
  }

  /**
   * The name `name` is an alias of (its CNAME record's target), or null when it is no alias.
   * A failing look-up is ProbeError('dns_failure').
   */
  async cname(name: string, signal: AbortLike): Promise<string | null> {
    if (specialUseName(name) !== null) return null;
    const answer = await Promise.race([
      settle(this.channel.resolveCname(name)),
      new Promise<never>((_, reject) => {
        if (signal.aborted) reject(new ProbeError('timeout'));
        signal.addEventListener('abort', () => reject(new ProbeError('timeout')), { once: true });
      }),
    ]);
    if (answer.ok) return answer.value[0]?.toLowerCase().replace(/\.$/, '') ?? null;
    if (NO_RECORD_CODES.has(answer.code ?? '')) return null;
    throw dnsFailure(answer.error);
  }

  /** Every address must pass: one refused answer refuses the name (no partial use). */
  private check(ips: readonly string[]): void {
    if (!this.tracer.enabled) return this.checkNow(ips);
    this.tracer.spanSync('status.guard', (span) => {
      span.set('observer.guard.addresses', ips.length);
      this.checkNow(ips);
    });
  }

  private checkNow(ips: readonly string[]): void {
    if (ips.some((ip) => !this.guard.isAllowed(ip))) throw new TargetRefusedError();
  }
}

/**
 * The SRV record to use: lowest priority, then highest weight (RFC 2782 orders by priority and
 * prefers weight; a deterministic pick keeps repeated queries on the same server), then target
 * name and port so equal records always give the same answer. Records with target "." or port 0
 * cannot be contacted and are skipped.
 */
export function chooseSrv(records: readonly DnsSrvRecord[]): DnsSrvRecord | null {
  const usable = records.filter((r) => r.name !== '' && r.name !== '.' && r.port > 0);
  usable.sort(
    (a, b) =>
      a.priority - b.priority || b.weight - a.weight || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) || a.port - b.port,
  );
  return usable[0] ?? null;
}

/**
 * The addresses to try, in order: IPv4 and IPv6 alternating from the first IPv4 address (one
 * per family before any second one), each family in the order given, at most `max`.
 */
export function connectionOrder(ips: readonly string[], max: number): string[] {
  const v4 = ips.filter((ip) => isIPv4(ip));
  const v6 = ips.filter((ip) => !isIPv4(ip));
  const ordered: string[] = [];
  for (let i = 0; ordered.length < max && i < Math.max(v4.length, v6.length); i += 1) {
    if (i < v4.length) ordered.push(v4[i]!);
    if (i < v6.length && ordered.length < max) ordered.push(v6[i]!);
  }
  return ordered;
}

/** Java and legacy look up SRV when no port is given; a name too long for the prefix (RFC 1035 §2.3.4) has none. */
function usesSrv(address: ParsedAddress, mode: QueryMode): boolean {
  return mode !== 'bedrock' && address.port === null && MINECRAFT_SRV_PREFIX.length + address.host.length <= MAX_DNS_NAME_LENGTH;
}

function settle<T>(promise: Promise<T>): Promise<Lookup<T>> {
  return promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, code: (error as NodeJS.ErrnoException | null)?.code, error }),
  );
}

function throwIfAborted(signal: AbortLike): void {
  if (signal.aborted) throw new ProbeError('timeout', { cause: signal.reason });
}

function dnsFailure(cause: unknown): ProbeError {
  return new ProbeError('dns_failure', { cause });
}
