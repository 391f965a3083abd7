import { describe, expect, it } from 'vitest';
import { BadRequestError, InvalidAddressError } from '../../src/core/errors.js';
import { defaultPort, parseAddress, parseQueryMode, type ParsedAddress } from '../../src/resolve/index.js';

const label63 = 'a'.repeat(63);
// 63 + 1 + 63 + 1 + 63 + 1 + 61 = 253 characters: the longest host name (RFC 1035 §2.3.4).
const longestHostname = `${label63}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}`;

const valid: Array<[input: string, expected: ParsedAddress]> = [
  ['example.com', { host: 'example.com', port: null, kind: 'hostname' }],
  ['Example.COM', { host: 'example.com', port: null, kind: 'hostname' }],
  ['example.com.', { host: 'example.com', port: null, kind: 'hostname' }],
  ['example.com:25565', { host: 'example.com', port: 25565, kind: 'hostname' }],
  ['Play.Example.com.:19132', { host: 'play.example.com', port: 19132, kind: 'hostname' }],
  ['mc.example.com:1', { host: 'mc.example.com', port: 1, kind: 'hostname' }],
  ['mc.example.com:65535', { host: 'mc.example.com', port: 65535, kind: 'hostname' }],
  ['mc.example.com:00080', { host: 'mc.example.com', port: 80, kind: 'hostname' }],
  ['bücher.de', { host: 'xn--bcher-kva.de', port: null, kind: 'hostname' }],
  ['BÜCHER.de:25566', { host: 'xn--bcher-kva.de', port: 25566, kind: 'hostname' }],
  ['xn--bcher-kva.de', { host: 'xn--bcher-kva.de', port: null, kind: 'hostname' }],
  ['☃.net', { host: 'xn--n3h.net', port: null, kind: 'hostname' }],
  ['ＭＩＮＥ.example', { host: 'mine.example', port: null, kind: 'hostname' }],
  ['example。com', { host: 'example.com', port: null, kind: 'hostname' }],
  ['localhost', { host: 'localhost', port: null, kind: 'hostname' }],
  ['a-b.c-d.example', { host: 'a-b.c-d.example', port: null, kind: 'hostname' }],
  ['123.example', { host: '123.example', port: null, kind: 'hostname' }],
  ['0x7f.example', { host: '0x7f.example', port: null, kind: 'hostname' }],
  [`${label63}.com`, { host: `${label63}.com`, port: null, kind: 'hostname' }],
  [longestHostname, { host: longestHostname, port: null, kind: 'hostname' }],
  [`${longestHostname}.`, { host: longestHostname, port: null, kind: 'hostname' }],
  ['1.2.3.4', { host: '1.2.3.4', port: null, kind: 'ipv4' }],
  ['8.8.8.8:25565', { host: '8.8.8.8', port: 25565, kind: 'ipv4' }],
  ['127.0.0.1', { host: '127.0.0.1', port: null, kind: 'ipv4' }],
  ['0.0.0.0:25565', { host: '0.0.0.0', port: 25565, kind: 'ipv4' }],
  ['1.2.3.4.', { host: '1.2.3.4', port: null, kind: 'ipv4' }],
  ['１２７.０.０.１', { host: '127.0.0.1', port: null, kind: 'ipv4' }],
  ['[2001:db8::1]', { host: '2001:db8::1', port: null, kind: 'ipv6' }],
  ['[2001:DB8:0:0:0:0:0:1]:25565', { host: '2001:db8::1', port: 25565, kind: 'ipv6' }],
  ['2001:db8::1', { host: '2001:db8::1', port: null, kind: 'ipv6' }],
  ['2001:0db8:0000:0000:0000:ff00:0042:8329', { host: '2001:db8::ff00:42:8329', port: null, kind: 'ipv6' }],
  ['::1', { host: '::1', port: null, kind: 'ipv6' }],
  ['[::1]:19132', { host: '::1', port: 19132, kind: 'ipv6' }],
  ['::ffff:127.0.0.1', { host: '::ffff:7f00:1', port: null, kind: 'ipv6' }],
  ['[::ffff:1.2.3.4]:80', { host: '::ffff:102:304', port: 80, kind: 'ipv6' }],
  // A bare IPv6 cannot carry a port: the last group is part of the address.
  ['::1:8080', { host: '::1:8080', port: null, kind: 'ipv6' }],
];

const oddIPv4 = /four decimal numbers/;
const badPort = /port must be a whole number from 1 to 65535/;
const badLabel = /letters, digits and hyphens/;

const invalid: Array<[input: string, reason: RegExp]> = [
  ['', /empty/],
  ['a'.repeat(256), /longer than 255 characters/],
  [`${'a'.repeat(250)}.com:25565`, /longer than 255 characters/],
  [`${longestHostname}a`, /host name is longer than 253/],
  [`${'a'.repeat(64)}.com`, /label .* longer than 63/],
  ['exa mple.com', /spaces/],
  [' example.com', /spaces/],
  ['example.com\n', /control characters/],
  ['http://example.com', /URL punctuation/],
  ['example.com/path', /URL punctuation/],
  ['user@example.com', /URL punctuation/],
  ['example.com#frag', /URL punctuation/],
  ['example.com:', /port after ":" is empty/],
  ['example.com:0', badPort],
  ['example.com:65536', badPort],
  ['example.com:123456', badPort],
  ['example.com:-1', badPort],
  ['example.com:25565a', badPort],
  ['example.com:+80', badPort],
  [':25565', /no host/],
  ['2130706433', oddIPv4],
  ['0x7f.1', oddIPv4],
  ['0177.0.0.1', oddIPv4],
  ['127.1', oddIPv4],
  ['127.0.1', oddIPv4],
  ['0', oddIPv4],
  ['0x7f000001', oddIPv4],
  ['0x7f.0x0.0x0.0x1', oddIPv4],
  ['127.0.0.01', oddIPv4],
  ['256.1.1.1', oddIPv4],
  ['1.2.3.4.5', oddIPv4],
  ['2130706433:25565', oddIPv4],
  ['example.123', oddIPv4],
  ['a.0x7f', oddIPv4],
  ['fe80::1%eth0', /Zone identifiers/],
  ['[fe80::1%eth0]:25565', /Zone identifiers/],
  ['[fe80::1%25eth0]', /Zone identifiers/],
  ['127.0.0.1%eth0', /Zone identifiers/],
  ['[1.2.3.4]', /only for IPv6/],
  ['[1.2.3.4]:25565', /only for IPv6/],
  ['[example.com]', /not a valid IPv6/],
  ['[::1', /\[IPv6\]:port/],
  ['::1]', /not a valid IPv6/],
  ['example.com]', /unmatched/],
  ['[]', /brackets are empty/],
  ['[::1]x', /\[IPv6\]:port/],
  ['[::1]:', /port after ":" is empty/],
  ['[::1]:0', badPort],
  ['1::2::3', /not a valid IPv6/],
  ['::1:25565', /\[IPv6\]:port/],
  ['[gggg::1]', /not a valid IPv6/],
  ['a..b', /empty label/],
  ['.example.com', /empty label/],
  ['.', /host name is empty/],
  ['-a.example', badLabel],
  ['a-.example', badLabel],
  ['a_b.example', badLabel],
  ['ex!ample.com', badLabel],
  ['xn--zz.com', /invalid punycode/],
  ['a\u200db.com', /internationalised domain name/],
];

function reasonOf(input: string): unknown {
  try {
    parseAddress(input);
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('parseAddress', () => {
  it('has a table of at least 40 cases', () => {
    expect(valid.length + invalid.length).toBeGreaterThanOrEqual(40);
  });

  it.each(valid)('accepts %j', (input, expected) => {
    expect(parseAddress(input)).toEqual(expected);
  });

  it.each(invalid)('refuses %j with a clear reason', (input, reason) => {
    const error = reasonOf(input);
    expect(error).toBeInstanceOf(InvalidAddressError);
    const e = error as InvalidAddressError;
    expect(e.statusCode).toBe(400);
    expect(e.code).toBe('invalid_address');
    expect(e.message).toMatch(reason);
  });

  it('never echoes the input back in the message', () => {
    const error = reasonOf('<script>alert(1)</script>.example') as InvalidAddressError;
    expect(error).toBeInstanceOf(InvalidAddressError);
    expect(error.message).not.toContain('<script>');
  });
});

describe('parseQueryMode', () => {
  it.each([
    [false, false, 'java'],
    [true, false, 'legacy'],
    [false, true, 'bedrock'],
  ] as const)('legacy=%s bedrock=%s is %s', (legacy, bedrock, mode) => {
    expect(parseQueryMode(legacy, bedrock)).toBe(mode);
  });

  it('refuses legacy and bedrock together with a 400', () => {
    expect(() => parseQueryMode(true, true)).toThrow(BadRequestError);
    try {
      parseQueryMode(true, true);
    } catch (error) {
      expect((error as BadRequestError).statusCode).toBe(400);
    }
  });

  it('gives the default ports', () => {
    expect(defaultPort('java')).toBe(25565);
    expect(defaultPort('legacy')).toBe(25565);
    expect(defaultPort('bedrock')).toBe(19132);
  });
});
