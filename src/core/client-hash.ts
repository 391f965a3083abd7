import { createHmac, randomBytes } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import type { Clock } from './clock.js';

/**
 * Turns a client address into an opaque key, so that nothing that outlives a request (rate
 * limit keys, distinct-client counts) holds a raw IP. The key is an HMAC with a secret that
 * lives in memory only and is replaced when the UTC day changes: yesterday's keys cannot be
 * linked to today's, and no secret is ever written anywhere.
 *
 * IPv6 clients are grouped by /64 (one subscriber usually holds a whole /64), and
 * IPv4-mapped IPv6 addresses count as the IPv4 address they carry.
 */
export class ClientHasher {
  private day = '';
  private secret: Buffer = Buffer.alloc(0);

  constructor(private readonly clock: Clock) {}

  hash(ip: string): string {
    const day = new Date(this.clock.now()).toISOString().slice(0, 10);
    if (day !== this.day) {
      this.day = day;
      this.secret = randomBytes(32);
    }
    return createHmac('sha256', this.secret).update(clientNetwork(ip)).digest('base64url').slice(0, 22);
  }
}

/** The network a client address stands for: the IPv4 address, or the IPv6 /64. */
export function clientNetwork(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const addr = ipaddr.process(ip);
  if (addr.kind() === 'ipv4') return addr.toString();
  const parts = (addr as ipaddr.IPv6).parts.slice(0, 4);
  return `${parts.map((p) => p.toString(16)).join(':')}::/64`;
}
