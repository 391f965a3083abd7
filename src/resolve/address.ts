/**
 * Parsing of the server address a client types (`host`, `host:port`, IPv4, `[IPv6]:port`, bare
 * IPv6), the forms listed in docs/api.md, "Addresses". Pure: no DNS, no I/O.
 *
 * Odd IPv4 spellings are refused here rather than normalised. `inet_aton` and the WHATWG URL
 * parser read `2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1` and `0` as 127.0.0.1 / 0.0.0.0,
 * but DNS would treat them as names; refusing anything that is not dotted-quad decimal keeps a
 * single meaning for every accepted string. No real host name is lost: the last label (the
 * TLD) of a host name is never all-numeric (RFC 3696 §2), so every such string is refused.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { domainToASCII } from 'node:url';
import ipaddr from 'ipaddr.js';
import { BadRequestError, InvalidAddressError } from '../core/errors.js';
import { DEFAULT_PORTS, type QueryMode } from '../core/types.js';
import { decodePunycode } from './punycode.js';

export interface ParsedAddress {
  /** Normalised: lowercase punycode host name, or canonical IP text (IPv6 without brackets). */
  host: string;
  /** The port the client gave, or null for the mode's default (and, for Java, an SRV look-up). */
  port: number | null;
  kind: 'hostname' | 'ipv4' | 'ipv6';
}

/** Anything longer than 255 characters is refused (docs/api.md, "Addresses"). */
export const MAX_ADDRESS_LENGTH = 255;
/** RFC 1035 §2.3.4: 255 octets on the wire, i.e. 253 characters of dotted text. */
const MAX_HOSTNAME_LENGTH = 253;
/** RFC 1035 §2.3.4. */
const MAX_LABEL_LENGTH = 63;

/** Default ports of the vanilla servers. */
export const DEFAULT_JAVA_PORT = DEFAULT_PORTS.java;
export const DEFAULT_BEDROCK_PORT = DEFAULT_PORTS.bedrock;

export function defaultPort(mode: QueryMode): number {
  return mode === 'bedrock' ? DEFAULT_BEDROCK_PORT : DEFAULT_JAVA_PORT;
}

/** The `query` echo of a status: the normalised host, the port asked for or the default, the mode's flags. */
export function queryEcho(parsed: ParsedAddress, mode: QueryMode): { host: string; port: number; legacy: boolean; bedrock: boolean } {
  return { host: parsed.host, port: parsed.port ?? defaultPort(mode), legacy: mode === 'legacy', bedrock: mode === 'bedrock' };
}

/** The query mode from the `legacy` and `bedrock` flags; both at once is a 400. */
export function parseQueryMode(legacy: boolean, bedrock: boolean): QueryMode {
  if (legacy && bedrock) {
    throw new BadRequestError('invalid_query', 'The legacy and bedrock options cannot be used together.');
  }
  if (bedrock) return 'bedrock';
  return legacy ? 'legacy' : 'java';
}

// RFC 952 / RFC 1123 §2.1 "LDH" label: letters, digits and inner hyphens.
const LDH_LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;
const FORBIDDEN_CHARACTERS = /[\s\u0000-\u001f\u007f/\\?#@]/u;

export function parseAddress(input: string): ParsedAddress {
  if (input.length === 0) throw new InvalidAddressError('The address is empty.');
  if (input.length > MAX_ADDRESS_LENGTH) {
    throw new InvalidAddressError(`The address is longer than ${MAX_ADDRESS_LENGTH} characters.`);
  }
  if (FORBIDDEN_CHARACTERS.test(input)) {
    throw new InvalidAddressError('The address contains spaces, control characters or URL punctuation.');
  }

  if (input.startsWith('[')) return parseBracketed(input);

  const colons = input.split(':').length - 1;
  if (colons >= 2) {
    // A bare IPv6 address cannot carry a port: `[v6]:port` is the only way to give one.
    return { host: parseIPv6(input), port: null, kind: 'ipv6' };
  }
  if (input.includes(']')) throw new InvalidAddressError('The address has an unmatched "]".');

  let hostPart = input;
  let port: number | null = null;
  if (colons === 1) {
    const at = input.indexOf(':');
    hostPart = input.slice(0, at);
    port = parsePort(input.slice(at + 1));
  }
  if (hostPart === '') throw new InvalidAddressError('The address has no host before the port.');
  if (hostPart.includes('%')) throw new InvalidAddressError('Zone identifiers ("%...") are not accepted.');
  return { ...parseHost(hostPart), port };
}

function parseBracketed(input: string): ParsedAddress {
  const match = /^\[([^[\]]*)\](?::(.*))?$/.exec(input);
  if (match === null) {
    throw new InvalidAddressError('A bracketed address must look like [IPv6] or [IPv6]:port.');
  }
  const inner = match[1]!;
  if (inner === '') throw new InvalidAddressError('The brackets are empty.');
  if (isIPv4(inner)) throw new InvalidAddressError('Brackets are only for IPv6 addresses.');
  const port = match[2] === undefined ? null : parsePort(match[2]);
  return { host: parseIPv6(inner), port, kind: 'ipv6' };
}

/** Canonical (RFC 5952) text of an IPv6 address, or a 400. */
function parseIPv6(text: string): string {
  if (text.includes('%')) {
    throw new InvalidAddressError('Zone identifiers ("%...") are not accepted in IPv6 addresses.');
  }
  // node:net is strict (RFC 4291 §2.2 text forms only); ipaddr.js then gives the RFC 5952 form.
  if (!isIPv6(text)) {
    throw new InvalidAddressError('The address is not a valid IPv6 address; an IPv6 address with a port is written [IPv6]:port.');
  }
  return ipaddr.IPv6.parse(text).toRFC5952String();
}

function parsePort(text: string): number {
  if (text === '') throw new InvalidAddressError('The port after ":" is empty.');
  if (!/^\d+$/.test(text)) throw new InvalidAddressError('The port must be a whole number from 1 to 65535.');
  const port = Number(text);
  if (text.length > 5 || port < 1 || port > 65535) {
    throw new InvalidAddressError('The port must be a whole number from 1 to 65535.');
  }
  return port;
}

/** A host that is not bracketed: dotted-quad IPv4 or a host name. */
function parseHost(raw: string): Omit<ParsedAddress, 'port'> {
  const host = normaliseHostname(raw);
  if (isIPv4(host)) return { host, kind: 'ipv4' };
  validateHostname(host);
  return { host, kind: 'hostname' };
}

/**
 * Case-folds, converts an IDN to punycode (UTS #46 via the WHATWG `domainToASCII`) and drops
 * one trailing dot (the root label, RFC 1034 §3.1). The result still needs validating.
 */
function normaliseHostname(raw: string): string {
  let host = raw;
  // Only non-ASCII input goes through domainToASCII: for ASCII it would also apply the WHATWG
  // IPv4 number parser and turn `0x7f.1` into 127.0.0.1, which this module refuses instead.
  if (/[^\x20-\x7e]/.test(host)) {
    host = domainToASCII(host);
    if (host === '') throw new InvalidAddressError('The host name is not a valid internationalised domain name.');
  }
  host = host.toLowerCase();
  if (host.endsWith('.')) host = host.slice(0, -1);
  if (host === '') throw new InvalidAddressError('The host name is empty.');
  return host;
}

/** RFC 1035 §2.3.4 lengths, RFC 1123 §2.1 LDH labels, RFC 5891 A-labels; refuses odd IPv4. */
function validateHostname(host: string): void {
  const labels = host.split('.');
  const last = labels[labels.length - 1]!;
  // ipaddr.js's loose IPv4 parser accepts every inet_aton spelling (hex, octal, 1-3 parts); a
  // numeric last label is what makes the WHATWG URL host parser read a host as IPv4.
  // (ipaddr.js is only asked when every character could belong to one of its IPv4 spellings:
  // it parses by throwing, which costs more than the rest of this function.)
  if (/^[0-9.]+$/.test(host) || /^(?:\d+|0x[0-9a-f]*)$/.test(last) || (/^[0-9a-fx.]+$/.test(host) && ipaddr.IPv4.isValid(host))) {
    throw new InvalidAddressError(
      'The address is not a valid host name or IPv4 address; write IPv4 addresses as four decimal numbers (a.b.c.d).',
    );
  }
  if (host.length > MAX_HOSTNAME_LENGTH) {
    throw new InvalidAddressError(`The host name is longer than ${MAX_HOSTNAME_LENGTH} characters.`);
  }
  for (const label of labels) {
    if (label === '') throw new InvalidAddressError('The host name has an empty label (two dots in a row).');
    if (label.length > MAX_LABEL_LENGTH) {
      throw new InvalidAddressError(`A label of the host name is longer than ${MAX_LABEL_LENGTH} characters.`);
    }
    if (!LDH_LABEL.test(label)) {
      throw new InvalidAddressError(
        'The host name may only contain letters, digits and hyphens, and a label cannot start or end with a hyphen.',
      );
    }
  }
  if (labels.some((label) => label.startsWith('xn--') && !isALabel(label))) {
    throw new InvalidAddressError('The host name contains an invalid punycode ("xn--") label.');
  }
}

/**
 * An A-label is valid punycode of a valid U-label (RFC 5891 §5.4): it decodes to a label that is
 * not plain ASCII, and that label encodes back to the very same A-label.
 */
function isALabel(label: string): boolean {
  const unicode = decodePunycode(label.slice('xn--'.length));
  return unicode !== null && /[^\x00-\x7f]/.test(unicode) && domainToASCII(unicode) === label;
}

/**
 * Normalises and checks a host name found in DNS (an SRV target). Returns null when it is not
 * a usable host name; IP literals are returned as they are, for the guard to check.
 */
export function parseDnsName(name: string): Omit<ParsedAddress, 'port'> | null {
  if (name.length === 0 || name.length > MAX_ADDRESS_LENGTH) return null;
  try {
    if (isIPv6(name)) return { host: parseIPv6(name), kind: 'ipv6' };
    if (FORBIDDEN_CHARACTERS.test(name) || name.includes(':') || name.includes('%')) return null;
    return parseHost(name);
  } catch (error) {
    if (error instanceof InvalidAddressError) return null;
    throw error;
  }
}
