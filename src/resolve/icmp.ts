/**
 * ICMP echo over two long-lived raw sockets (one ICMP for IPv4, one ICMPv6), shared by every
 * echo: no process per echo, whose spawn would cost far more CPU than the status look-up it
 * accompanies (docs/performance.md). Replies are matched by identifier (one per pinger) and
 * sequence number, and by source address.
 *
 * Packet layout, RFC 792 (IPv4, type 8 request / 0 reply) and RFC 4443 §4.1-4.2 (IPv6, type
 * 128 / 129): type (1 byte), code 0 (1), checksum (2), identifier (2), sequence (2), data.
 * The IPv4 checksum is ours to write; for ICMPv6 raw sockets the kernel computes it (RFC 3542
 * §3.1). An IPv4 raw socket hands us the IP header too: its length is the IHL nibble × 4.
 *
 * Echoes to an IP already in flight share one; answers are kept `cacheMs` (a few seconds).
 * Raw sockets need CAP_NET_RAW (root and default container users have it). Where they are
 * refused, that family answers null ("ICMP not available") at once: never a process, never
 * a queue, so it can never cap status throughput.
 */
import { isIP } from 'node:net';
import raw from '@neuralegion/raw-socket';
import ipaddr from 'ipaddr.js';
import { LRUCache } from 'lru-cache';
import type { AbortLike } from '../core/deadline.js';

/** The part of a raw-socket the pinger uses (tests inject stand-ins for hostile cases). */
export interface IcmpSocket {
  send(buffer: Buffer, offset: number, length: number, address: string, callback: (error: Error | null, bytes: number) => void): unknown;
  on(event: 'message', listener: (buffer: Buffer, source: string) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  close(): unknown;
}

export type IcmpFamily = 4 | 6;
export type IcmpMode = 'raw' | 'unavailable' | 'off';

export interface IcmpPingerOptions {
  /** How long an echo waits for its reply (default 2000 ms); no reply is `false`. */
  timeoutMs?: number;
  /** How long an answer is reused for the same IP (default 3000 ms). */
  cacheMs?: number;
  /** Most IPs whose answers are kept (default 10,000). */
  cacheEntries?: number;
  /** Opens the raw socket of a family; throws (EPERM) where raw sockets are refused. */
  openSocket?: (family: IcmpFamily) => IcmpSocket;
  /** Unexpected socket errors. */
  onError?: (error: unknown) => void;
}

const ECHO_REQUEST = { 4: 8, 6: 128 } as const;
const ECHO_REPLY = { 4: 0, 6: 129 } as const;
const HEADER_BYTES = 8;
const PAYLOAD = Buffer.from('observer');

/** The real raw socket of a family (raw-socket 1.8.6); throws where CAP_NET_RAW is missing. */
export function openRawSocket(family: IcmpFamily): IcmpSocket {
  return raw.createSocket({
    protocol: family === 4 ? raw.Protocol.ICMP : raw.Protocol.ICMPv6,
    addressFamily: family === 4 ? raw.AddressFamily.IPv4 : raw.AddressFamily.IPv6,
  }) as unknown as IcmpSocket;
}

interface Pending {
  ip: string;
  family: IcmpFamily;
  timer: NodeJS.Timeout;
  resolve: (answer: boolean | null) => void;
}

export class IcmpPinger {
  private readonly sockets = new Map<IcmpFamily, IcmpSocket | Error>();
  private readonly pending = new Map<number, Pending>();
  private readonly inFlight = new Map<string, Promise<boolean | null>>();
  private readonly answers: LRUCache<string, { answer: boolean | null }>;
  private readonly identifier = Math.floor(Math.random() * 0x10000);
  private sequence = Math.floor(Math.random() * 0x10000);
  private closed = false;
  private readonly timeoutMs: number;
  private readonly cacheMs: number;
  private readonly openSocket: (family: IcmpFamily) => IcmpSocket;
  private readonly onError: (error: unknown) => void;

  constructor(options: IcmpPingerOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? 2000;
    // Bounded: the least recently asked-for IP is forgotten first.
    this.answers = new LRUCache({
      max: options.cacheEntries ?? 10_000,
      ttl: Math.max(1, options.cacheMs ?? 3000),
      ttlAutopurge: false,
    });
    this.cacheMs = options.cacheMs ?? 3000;
    this.openSocket = options.openSocket ?? openRawSocket;
    this.onError = options.onError ?? (() => {});
  }

  /**
   * Opens both sockets now and says which mode is active, e.g. for the start-up log:
   * `raw` when at least one family has its socket, else `unavailable` (with the reason).
   */
  start(): { mode: IcmpMode; detail: string } {
    const v4 = this.socket(4);
    const v6 = this.socket(6);
    const describe = (family: IcmpFamily, s: IcmpSocket | Error) =>
      s instanceof Error ? `IPv${family} unavailable (${s.message})` : `IPv${family} raw socket`;
    const detail = `${describe(4, v4)}, ${describe(6, v6)}`;
    return { mode: v4 instanceof Error && v6 instanceof Error ? 'unavailable' : 'raw', detail };
  }

  /**
   * True when `ip` answered an echo, false when it did not within the wait (or `signal`
   * aborted first), null when ICMP is not available to the process for its family.
   */
  echo(ip: string, signal?: AbortLike): Promise<boolean | null> {
    const family = isIP(ip);
    if (family === 0 || ip.includes('%')) return Promise.reject(new TypeError('echo needs an IPv4 or IPv6 address'));
    if (signal?.aborted) return Promise.resolve(false);
    const kept = this.cacheMs > 0 ? this.answers.get(ip) : undefined;
    if (kept) return Promise.resolve(kept.answer);

    let shared = this.inFlight.get(ip);
    if (!shared) {
      shared = this.send(ip, family as IcmpFamily).then((answer) => {
        this.inFlight.delete(ip);
        if (this.cacheMs > 0) this.answers.set(ip, { answer });
        return answer;
      });
      this.inFlight.set(ip, shared);
    }
    if (!signal) return shared;
    // The caller's deadline ends its wait, not the shared echo.
    return new Promise((resolve) => {
      const onAbort = () => resolve(false);
      signal.addEventListener('abort', onAbort, { once: true });
      void shared.then((answer) => {
        signal.removeEventListener('abort', onAbort);
        resolve(answer);
      });
    });
  }

  /** Closes the sockets; echoes still waiting answer false. */
  close(): void {
    this.closed = true;
    for (const [sequence, p] of this.pending) {
      clearTimeout(p.timer);
      this.pending.delete(sequence);
      p.resolve(false);
    }
    for (const s of this.sockets.values()) if (!(s instanceof Error)) s.close();
    this.sockets.clear();
  }

  private socket(family: IcmpFamily): IcmpSocket | Error {
    let s = this.sockets.get(family);
    if (s) return s;
    try {
      const opened = this.openSocket(family);
      opened.on('message', (buffer, source) => this.receive(family, buffer, source));
      opened.on('error', (error) => {
        // raw-socket closes a socket after an error: drop it, the next echo opens a new one.
        this.onError(error);
        if (this.sockets.get(family) === opened) this.sockets.delete(family);
        this.failPending(family);
      });
      s = opened;
    } catch (error) {
      s = error instanceof Error ? error : new Error(String(error));
    }
    this.sockets.set(family, s);
    return s;
  }

  private send(ip: string, family: IcmpFamily): Promise<boolean | null> {
    if (this.closed) return Promise.resolve(null);
    const s = this.socket(family);
    if (s instanceof Error) return Promise.resolve(null);
    let sequence = (this.sequence = (this.sequence + 1) & 0xffff);
    // 65,536 echoes in flight at once would wrap onto a waiting one: skip it.
    for (let tries = 0; this.pending.has(sequence) && tries < 0x10000; tries++) sequence = this.sequence = (sequence + 1) & 0xffff;
    const packet = Buffer.alloc(HEADER_BYTES + PAYLOAD.length);
    packet.writeUInt8(ECHO_REQUEST[family], 0);
    packet.writeUInt16BE(this.identifier, 4);
    packet.writeUInt16BE(sequence, 6);
    PAYLOAD.copy(packet, HEADER_BYTES);
    if (family === 4) raw.writeChecksum(packet, 2, raw.createChecksum(packet));

    return new Promise((resolve) => {
      const settle = (answer: boolean | null) => {
        const p = this.pending.get(sequence);
        if (!p) return;
        clearTimeout(p.timer);
        this.pending.delete(sequence);
        resolve(answer);
      };
      const timer = setTimeout(() => settle(false), this.timeoutMs);
      this.pending.set(sequence, { ip, family, timer, resolve: settle });
      try {
        s.send(packet, 0, packet.length, ip, (error) => {
          // EHOSTUNREACH, ENETUNREACH…: no echo can come back.
          if (error) settle(false);
        });
      } catch {
        settle(false);
      }
    });
  }

  private receive(family: IcmpFamily, buffer: Buffer, source: string): void {
    // IPv4: skip the IP header (IHL in 32-bit words); IPv6 raw sockets deliver ICMPv6 only.
    const offset = family === 4 ? (buffer[0]! & 0x0f) * 4 : 0;
    if (buffer.length < offset + HEADER_BYTES) return;
    if (buffer[offset] !== ECHO_REPLY[family] || buffer[offset + 1] !== 0) return;
    if (buffer.readUInt16BE(offset + 4) !== this.identifier) return;
    const p = this.pending.get(buffer.readUInt16BE(offset + 6));
    if (!p || p.family !== family || !sameAddress(p.ip, source)) return;
    p.resolve(true);
  }

  private failPending(family: IcmpFamily): void {
    for (const p of [...this.pending.values()]) if (p.family === family) p.resolve(null);
  }
}

/** `::1` and `0:0:0:0:0:0:0:1` are one address. */
function sameAddress(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    return ipaddr.parse(a).toNormalizedString() === ipaddr.parse(b).toNormalizedString();
  } catch {
    return false;
  }
}
