import { createHmac, randomBytes } from 'node:crypto';
import { isIPv4 } from 'node:net';
import ipaddr from 'ipaddr.js';
import { LRUCache } from 'lru-cache';
import type { Clock } from './clock.js';

const DAY_MS = 86_400_000;
/** Client keys kept for reuse (the least recently used go first); emptied whenever the secret changes. */
const MEMO_LIMIT = 10_000;

/** A client's two keys (ClientHasher.hash and ClientHasher.lookupKey). */
export interface ClientKeys {
  readonly key: string;
  readonly lookupKey: string;
}

/** A connection's client keys, with the address and the secret they were made from. */
interface ConnectionKeys extends ClientKeys {
  readonly ip: string;
  readonly secret: string;
}

/**
 * Where instances that share state get the day's secret from (e.g. Redis), so that one client
 * has one key on every instance. The secret must expire with its day.
 */
export interface DailySecretSource {
  /** The secret of the UTC day starting at `dayStart` (ms), created if missing. */
  secretFor(dayStart: number, dayEnd: number): Promise<string>;
}

/**
 * Turns a client address into an opaque key, so that nothing that outlives a request (rate
 * limit keys, distinct-client counts) holds a raw IP. The key is HMAC-SHA256 of the client's
 * network keyed with the day's secret (32 random bytes), whose secret is replaced when the
 * UTC day changes: yesterday's keys cannot be linked to today's. The secret lives in memory,
 * or, with several instances, in a shared source that expires it with its day.
 *
 * Two keys per client: `hash` for the rate limits groups IPv6 by /64 (one subscriber usually
 * holds a whole /64); `lookupKey`, for counting distinct clients (trends) and the new servers a
 * client may add, groups IPv6 by /48, since a subscriber often holds a /48 too and 65,536
 * "clients" of one /48 would rank any name first. IPv4-mapped IPv6 addresses count as the IPv4
 * address they carry.
 */
export class ClientHasher {
  private dayEnds = 0;
  private secret = '';
  private fetching: Promise<void> | null = null;
  /** Today's keys per address: a cached answer is served far faster than an HMAC is computed. */
  private readonly memo = new LRUCache<string, string>({ max: MEMO_LIMIT });
  private readonly lookupMemo = new LRUCache<string, string>({ max: MEMO_LIMIT });
  /** Keys by connection, gone with it: a kept-alive connection's requests cost no look-up of the address. */
  private readonly connections = new WeakMap<object, ConnectionKeys>();

  constructor(
    private readonly clock: Clock,
    private readonly source: DailySecretSource | null = null,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  /** Loads today's shared secret (call once before serving when a source is set). */
  async ready(): Promise<void> {
    this.rotateIfNeeded();
    await this.fetching;
  }

  /** The client's key for the rate limits (IPv6 by /64). */
  hash(ip: string): string {
    return this.keyOf(ip, this.memo, 64);
  }

  /** The client's key for distinct-client counts and the new-server allowance (IPv6 by /48). */
  lookupKey(ip: string): string {
    return this.keyOf(ip, this.lookupMemo, 48);
  }

  /**
   * Both keys of `ip` for a request on `connection` (its socket): made at the connection's first
   * request and kept with it while the address stays (a trusted proxy's connection carries many
   * clients) and the secret too.
   */
  keysOf(connection: object, ip: string): ClientKeys {
    this.rotateIfNeeded();
    const known = this.connections.get(connection);
    if (known !== undefined && known.ip === ip && known.secret === this.secret) return known;
    const keys: ConnectionKeys = { key: this.hash(ip), lookupKey: this.lookupKey(ip), ip, secret: this.secret };
    this.connections.set(connection, keys);
    return keys;
  }

  private keyOf(ip: string, memo: LRUCache<string, string>, ipv6Prefix: 48 | 64): string {
    this.rotateIfNeeded();
    let key = memo.get(ip);
    if (key === undefined) {
      key = createHmac('sha256', this.secret).update(clientNetwork(ip, ipv6Prefix)).digest('base64url').slice(0, 22);
      memo.set(ip, key);
    }
    return key;
  }

  /** Addresses memoised now. */
  get memoSize(): number {
    return this.memo.size;
  }

  /** Whether today's key of `ip` is memoised (for tests and the operator's eye). */
  isMemoised(ip: string): boolean {
    return this.memo.has(ip);
  }

  private setSecret(secret: string): void {
    this.secret = secret;
    this.memo.clear();
    this.lookupMemo.clear();
  }

  private rotateIfNeeded(): void {
    const now = this.clock.now();
    if (now < this.dayEnds) return;
    const dayStart = Math.floor(now / DAY_MS) * DAY_MS;
    this.dayEnds = dayStart + DAY_MS;
    // A local secret at once; the shared one replaces it as soon as it arrives.
    this.setSecret(randomBytes(32).toString('base64'));
    if (this.source) {
      const dayEnds = this.dayEnds;
      this.fetching = this.source
        .secretFor(dayStart, dayEnds)
        .then((secret) => {
          if (this.dayEnds === dayEnds) this.setSecret(secret);
        })
        .catch(this.onError)
        .finally(() => {
          this.fetching = null;
        });
    }
  }
}

/** The network a client address stands for: the IPv4 address, or the IPv6 /64 (or /48). */
export function clientNetwork(ip: string, ipv6Prefix: 48 | 64 = 64): string {
  if (isIPv4(ip)) return ip;
  if (!ipaddr.isValid(ip)) return ip;
  const addr = ipaddr.process(ip);
  if (addr.kind() === 'ipv4') return addr.toString();
  const parts = (addr as ipaddr.IPv6).parts.slice(0, ipv6Prefix / 16);
  return `${parts.map((p) => p.toString(16)).join(':')}::/${ipv6Prefix}`;
}
