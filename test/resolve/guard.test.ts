/**
 * The guard is a pure function of a string: these tests never open a socket or look up a name.
 * Ranges are from the IANA IPv4 and IPv6 Special-Purpose Address Registries.
 */
import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import { AddressGuard, isPublicAddress } from '../../src/resolve/index.js';

const refusedIPv4: Array<[ip: string, why: string]> = [
  ['0.0.0.0', 'unspecified / "this network" 0/8 (RFC 791)'],
  ['0.1.2.3', '"this network" 0/8'],
  ['10.0.0.1', 'private 10/8 (RFC 1918)'],
  ['10.255.255.255', 'private 10/8'],
  ['100.64.0.1', 'CGNAT 100.64/10 (RFC 6598)'],
  ['100.127.255.254', 'CGNAT 100.64/10'],
  ['127.0.0.1', 'loopback (RFC 1122)'],
  ['127.255.255.254', 'loopback 127/8'],
  ['169.254.169.254', 'link-local, cloud metadata (RFC 3927)'],
  ['172.16.0.1', 'private 172.16/12'],
  ['172.31.255.255', 'private 172.16/12'],
  ['192.0.0.1', 'IETF protocol assignments 192.0.0/24 (RFC 6890)'],
  ['192.0.0.170', 'NAT64 discovery (RFC 7050)'],
  ['192.0.2.1', 'TEST-NET-1 (RFC 5737)'],
  ['192.31.196.1', 'AS112-v4 (RFC 7535)'],
  ['192.52.193.1', 'AMT (RFC 7450)'],
  ['192.88.99.1', '6to4 relay anycast (RFC 7526)'],
  ['192.168.1.1', 'private 192.168/16'],
  ['192.175.48.1', 'AS112 (RFC 7534)'],
  ['198.18.0.1', 'benchmarking 198.18/15 (RFC 2544)'],
  ['198.19.255.255', 'benchmarking 198.18/15'],
  ['198.51.100.7', 'TEST-NET-2 (RFC 5737)'],
  ['203.0.113.9', 'TEST-NET-3 (RFC 5737)'],
  ['224.0.0.1', 'multicast 224/4 (RFC 5771)'],
  ['239.255.255.250', 'multicast (SSDP)'],
  ['240.0.0.1', 'reserved 240/4 (RFC 1112)'],
  ['255.255.255.254', 'reserved 240/4'],
  ['255.255.255.255', 'limited broadcast (RFC 919)'],
];

const refusedSpellings: Array<[ip: string, why: string]> = [
  ['2130706433', 'decimal integer 127.0.0.1'],
  ['0x7f.1', 'hex, two parts'],
  ['0177.0.0.1', 'octal first octet'],
  ['127.1', 'two-part form'],
  ['0', 'one-part 0.0.0.0'],
  ['0x7f000001', 'hex integer'],
  ['127.0.0.01', 'leading zero'],
  ['08.8.8.8', 'leading zero of a public address'],
  ['1.2.3', 'three-part form'],
  ['256.1.1.1', 'octet out of range'],
  [' 8.8.8.8', 'leading space'],
  ['8.8.8.8 ', 'trailing space'],
  ['8.8.8.8:53', 'with a port'],
  ['[2606:4700::1111]', 'bracketed'],
  ['2606:4700::1111%eth0', 'zone id on a public address (RFC 6874)'],
  ['example.com', 'a name, not an address'],
  ['', 'empty'],
];

const refusedIPv6: Array<[ip: string, why: string]> = [
  ['::', 'unspecified (RFC 4291)'],
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback, long form'],
  ['::ffff:127.0.0.1', 'IPv4-mapped loopback (RFC 4291 §2.5.5.2)'],
  ['::ffff:7f00:1', 'IPv4-mapped loopback, hex form'],
  ['::ffff:10.0.0.1', 'IPv4-mapped private'],
  ['::ffff:8.8.8.8', 'IPv4-mapped, even of a public address'],
  ['::ffff:0:8.8.8.8', 'IPv4-translated (RFC 6145)'],
  ['::127.0.0.1', 'IPv4-compatible, deprecated (RFC 4291 §2.5.5.1)'],
  ['::8.8.8.8', 'IPv4-compatible of a public address'],
  ['64:ff9b::7f00:1', 'NAT64 well-known prefix (RFC 6052) embedding loopback'],
  ['64:ff9b::808:808', 'NAT64 of a public address'],
  ['64:ff9b:1::a00:1', 'local-use NAT64 64:ff9b:1::/48 (RFC 8215)'],
  ['100::1', 'discard-only 100::/64 (RFC 6666)'],
  ['2001::1', 'Teredo 2001::/32 (RFC 4380)'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
  ['2001:2::1', 'benchmarking 2001:2::/48 (RFC 5180)'],
  ['2001:10::1', 'ORCHID (RFC 4843)'],
  ['2001:20::1', 'ORCHIDv2 (RFC 7343)'],
  ['2001:1ff::1', 'IETF protocol assignments 2001::/23 (RFC 2928)'],
  ['2001:db8::1', 'documentation (RFC 3849)'],
  ['2001:db8:ffff::1', 'documentation'],
  ['3fff::1', 'documentation 3fff::/20 (RFC 9637)'],
  ['2002:7f00:1::1', '6to4 embedding 127.0.0.1 (RFC 3056)'],
  ['2002:c0a8:101::1', '6to4 embedding 192.168.1.1'],
  ['2002:808:808::1', '6to4, whatever it embeds'],
  ['2620:4f:8000::1', 'AS112-v6 (RFC 7534)'],
  ['5f00::1', 'SRv6 SIDs (RFC 9602)'],
  ['fc00::1', 'unique local fc00::/7 (RFC 4193)'],
  ['fd12:3456:789a::1', 'unique local'],
  ['fe80::1', 'link-local fe80::/10'],
  ['fe80::1%eth0', 'link-local with a zone id'],
  ['febf::1', 'link-local, top of fe80::/10'],
  ['fec0::1', 'site-local, deprecated (RFC 3879)'],
  ['ff02::1', 'multicast, link scope'],
  ['ff0e::1', 'multicast, global scope'],
  ['1::1', 'outside 2000::/3 (IANA IPv6 Address Space: reserved)'],
  ['4000::1', 'outside 2000::/3 (unassigned)'],
  ['e000::1', 'outside 2000::/3'],
];

const publicAddresses: Array<[ip: string, why: string]> = [
  ['1.1.1.1', 'public v4'],
  ['8.8.8.8', 'public v4'],
  ['9.9.9.9', 'public v4'],
  ['11.0.0.1', 'just above 10/8'],
  ['100.63.255.255', 'just below CGNAT'],
  ['100.128.0.1', 'just above CGNAT'],
  ['126.255.255.255', 'just below loopback'],
  ['128.0.0.1', 'just above loopback'],
  ['172.15.255.255', 'just below 172.16/12'],
  ['172.32.0.1', 'just above 172.16/12'],
  ['192.167.255.255', 'just below 192.168/16'],
  ['192.169.0.1', 'just above 192.168/16'],
  ['198.17.255.255', 'just below 198.18/15'],
  ['198.20.0.1', 'just above 198.18/15'],
  ['223.255.255.254', 'just below multicast'],
  ['2606:4700:4700::1111', 'public v6'],
  ['2606:4700:4700:0:0:0:0:1111', 'public v6, long form'],
  ['2001:4860:4860::8888', 'public v6'],
  ['2A00:1450:4001:80B::200E', 'public v6, upper case'],
  ['2001:200::1', 'just above 2001::/23'],
  ['2c0f:fb50:4003::1', 'public v6'],
];

describe('isPublicAddress / AddressGuard without an allowlist', () => {
  const guard = new AddressGuard([]);

  // IANA IPv4 Special-Purpose Address Registry blocks that are not globally reachable, plus
  // multicast and reserved: the first and the last address of each are refused.
  it.each([
    '0.0.0.0/8',
    '10.0.0.0/8',
    '100.64.0.0/10',
    '127.0.0.0/8',
    '169.254.0.0/16',
    '172.16.0.0/12',
    '192.0.0.0/24',
    '192.0.2.0/24',
    '192.168.0.0/16',
    '198.18.0.0/15',
    '198.51.100.0/24',
    '203.0.113.0/24',
    '224.0.0.0/4',
    '240.0.0.0/4',
  ])('refuses both ends of %s', (cidr) => {
    const first = ipaddr.IPv4.networkAddressFromCIDR(cidr).toString();
    const last = ipaddr.IPv4.broadcastAddressFromCIDR(cidr).toString();
    for (const ip of [first, last]) expect(guard.isAllowed(ip), ip).toBe(false);
  });

  it.each(refusedIPv4)('refuses %s (%s)', (ip) => {
    expect(isPublicAddress(ip)).toBe(false);
    expect(guard.isAllowed(ip)).toBe(false);
  });

  it.each(refusedSpellings)('refuses the spelling %j (%s)', (ip) => {
    expect(isPublicAddress(ip)).toBe(false);
    expect(guard.isAllowed(ip)).toBe(false);
  });

  it.each(refusedIPv6)('refuses %s (%s)', (ip) => {
    expect(isPublicAddress(ip)).toBe(false);
    expect(guard.isAllowed(ip)).toBe(false);
  });

  it.each(publicAddresses)('allows %s (%s)', (ip) => {
    expect(isPublicAddress(ip)).toBe(true);
    expect(guard.isAllowed(ip)).toBe(true);
  });
});

describe('AddressGuard with TARGET_ALLOWLIST=127.0.0.0/8,::1/128', () => {
  const guard = new AddressGuard(['127.0.0.0/8', '::1/128']);

  it.each([
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['::1', true],
    ['0:0:0:0:0:0:0:1', true],
    // The IPv4-mapped form reaches the same IPv4 address, so the IPv4 CIDR covers it.
    ['::ffff:127.0.0.1', true],
    ['::ffff:7f00:1', true],
    ['8.8.8.8', true],
    ['2606:4700:4700::1111', true],
    ['10.0.0.1', false],
    ['::ffff:10.0.0.1', false],
    ['::2', false],
    ['fe80::1', false],
    // NAT64 and 6to4 are not the same address as the IPv4 they embed: not exempt.
    ['64:ff9b::7f00:1', false],
    ['2002:7f00:1::1', false],
    // Odd spellings stay refused even when the address they mean is allowlisted.
    ['2130706433', false],
    ['127.1', false],
    ['0x7f.0.0.1', false],
    ['127.000.000.001', false],
    ['::1%lo', false],
  ] as const)('%s → %s', (ip, allowed) => {
    expect(guard.isAllowed(ip)).toBe(allowed);
  });

  it('matches IPv6 CIDRs against IPv6 addresses', () => {
    const v6 = new AddressGuard(['fd00::/8']);
    expect(v6.isAllowed('fd00::5')).toBe(true);
    expect(v6.isAllowed('fc00::5')).toBe(false);
    expect(v6.isAllowed('10.0.0.1')).toBe(false);
  });

  it('refuses an invalid CIDR when built', () => {
    expect(() => new AddressGuard(['not-a-cidr'])).toThrow(TypeError);
    expect(() => new AddressGuard(['127.0.0.1'])).toThrow(TypeError);
  });
});
