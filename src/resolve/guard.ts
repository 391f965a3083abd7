/**
 * The public-address guard (docs/api.md, "Addresses"): Observer only contacts
 * public unicast addresses, so a status query cannot be used to probe loopback, a private
 * network or a cloud metadata service.
 *
 * A text form is accepted only when it is the strict form: dotted-quad decimal IPv4 or RFC 4291
 * §2.2 IPv6 without a zone id. Every other spelling is refused, so no parser can read the same
 * string as a different address later.
 *
 * Ranges come from ipaddr.js (`range()`), whose tables follow the IANA IPv4 and IPv6
 * Special-Purpose Address Registries (RFC 6890 and updates):
 *  - IPv4: `0.0.0.0/8`, `10/8`, `100.64/10` (CGNAT, RFC 6598), `127/8`, `169.254/16`, `172.16/12`,
 *    `192.0.0/24`, `192.0.2/24`, `192.31.196/24`, `192.52.193/24`, `192.88.99/24` (6to4 relay,
 *    RFC 7526), `192.168/16`, `192.175.48/24`, `198.18/15` (RFC 2544), `198.51.100/24`,
 *    `203.0.113/24`, `224/4` (multicast, RFC 5771), `240/4` and `255.255.255.255`.
 *  - IPv6: `::`, `::1`, `::ffff:0:0/96` (IPv4-mapped), `::ffff:0:0:0/96`, `64:ff9b::/96` and
 *    `64:ff9b:1::/48` (NAT64, RFC 6052 / 8215), `100::/64` (discard, RFC 6666), `2001::/23`
 *    (IETF protocol assignments, including Teredo `2001::/32`, benchmarking, ORCHID),
 *    `2001:db8::/32` and `3fff::/20` (documentation, RFC 3849 / 9637), `2002::/16` (6to4,
 *    RFC 3056), `2620:4f:8000::/48`, `5f00::/16`, `fc00::/7` (ULA, RFC 4193), `fe80::/10`,
 *    `fec0::/10` (site-local, RFC 3879), `ff00::/8`.
 * On top of that an IPv6 address must lie in `2000::/3`, the only block the IANA IPv6 Address
 * Space registry allocates to global unicast; this also refuses the deprecated IPv4-compatible
 * form `::a.b.c.d` (RFC 4291 §2.5.5.1) that ipaddr.js calls plain unicast.
 *
 * Translation forms (IPv4-mapped, NAT64, 6to4, Teredo) are refused whatever IPv4 address they
 * embed: none of them is how a Minecraft server publishes itself.
 */
import { isIPv4, isIPv6 } from 'node:net';
import ipaddr from 'ipaddr.js';

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** IANA IPv6 Address Space registry: Global Unicast (RFC 4291 §2.4). */
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');

/** Strict parse: the canonical text forms only, never inet_aton spellings or zone ids. */
function parseStrict(ip: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  if (isIPv4(ip)) return ipaddr.IPv4.parse(ip);
  if (isIPv6(ip) && !ip.includes('%')) return ipaddr.IPv6.parse(ip);
  return null;
}

/** True when `ip` is a strictly spelled, public unicast address. */
export function isPublicAddress(ip: string): boolean {
  const address = parseStrict(ip);
  if (address === null) return false;
  if (address.range() !== 'unicast') return false;
  if (address.kind() === 'ipv6') return address.match(GLOBAL_UNICAST_V6);
  return true;
}

export class AddressGuard {
  private readonly v4: Cidr[] = [];
  private readonly v6: Cidr[] = [];

  /** @param allowlist CIDRs exempt from the guard (TARGET_ALLOWLIST, or WEBHOOK_ALLOWLIST for webhooks), e.g. `127.0.0.0/8`. */
  constructor(allowlist: readonly string[]) {
    for (const text of allowlist) {
      let cidr: Cidr;
      try {
        cidr = ipaddr.parseCIDR(text);
      } catch (cause) {
        throw new TypeError(`Invalid CIDR in the allowlist: ${JSON.stringify(text)}`, { cause });
      }
      (cidr[0].kind() === 'ipv4' ? this.v4 : this.v6).push(cidr);
    }
  }

  /** True when Observer may contact `ip`: it is public, or the allowlist exempts it. */
  isAllowed(ip: string): boolean {
    return isPublicAddress(ip) || this.isAllowlisted(ip);
  }

  /** True when the allowlist names `ip`, public or not. */
  isAllowlisted(ip: string): boolean {
    const address = parseStrict(ip);
    if (address === null) return false;
    if (address.kind() === 'ipv4') return this.v4.some((cidr) => address.match(cidr));
    const v6 = address as ipaddr.IPv6;
    if (this.v6.some((cidr) => v6.match(cidr))) return true;
    // `::ffff:127.0.0.1` reaches 127.0.0.1 (RFC 4291 §2.5.5.2): the IPv4 CIDRs apply to it too.
    if (v6.isIPv4MappedAddress()) {
      const v4 = v6.toIPv4Address();
      return this.v4.some((cidr) => v4.match(cidr));
    }
    return false;
  }
}
