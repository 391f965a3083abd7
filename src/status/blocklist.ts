/**
 * Mojang's blocked-servers list: one SHA-1 (hex) per line, of a host name or an IPv4 pattern.
 * Matching is the vanilla client's (authlib/patchy `BlockedServers`), step for step: drop a
 * `_minecraft._tcp.` prefix and the trailing dots; the server itself; for a name also `*.` plus
 * the full name; then, while more than one dot-separated part remains, drop the leftmost label
 * (a name: `*.` + the rest) or the rightmost octet (IPv4: `a.b.c.*`, `a.b.*`, `a.*`). So
 * `mc.example.com` checks `mc.example.com`, `*.mc.example.com`, `*.example.com`, `*.com`, and
 * `*.example.com` on the list blocks `example.com` itself. Each candidate is lower-cased and
 * hashed as ISO-8859-1 bytes. The client checks the typed host, the resolved host name (the SRV
 * target) and the IP in Java's text form (IPv6 as eight uncompressed groups).
 *
 * The list is read from a file or fetched from an https URL (plain http only for a loopback
 * host, for tests), kept in memory, and reloaded every `refreshMinutes`; a failed reload keeps
 * the last good copy. `blocked` is null until a first copy is loaded.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import ipaddr from 'ipaddr.js';
import type { BlocklistSource } from '../config/index.js';
import type { QueryMode } from '../core/types.js';
import type { StatusAnswer, StatusLookup } from './types.js';

/** The published list is about 2,500 lines (100 KB); anything far larger is not it. */
const MAX_LIST_BYTES = 8 * 1024 * 1024;
const FETCH_TIMEOUT_MS = 30_000;
const SHA1_HEX = /^[0-9a-f]{40}$/;

const SRV_PREFIX = '_minecraft._tcp.';

/** Vanilla's IPv4 test: four parts, each an integer 0..255 as Java's Integer.parseInt reads it. */
function isVanillaIpv4(parts: readonly string[]): boolean {
  return parts.length === 4 && parts.every((part) => /^[+-]?[0-9]+$/.test(part) && Number(part) >= 0 && Number(part) <= 255);
}

/** The strings the vanilla client hashes for `server` (a name or an IP), in its order, lower-cased. */
export function blocklistCandidates(server: string): string[] {
  let name = server.startsWith(SRV_PREFIX) ? server.slice(SRV_PREFIX.length) : server;
  name = name.replace(/\.+$/, '');
  if (name === '') return [];
  const parts = name.split('.');
  const ip = isVanillaIpv4(parts);
  const out = [name];
  if (!ip) out.push(`*.${name}`);
  while (parts.length > 1) {
    if (ip) parts.pop();
    else parts.shift();
    out.push(ip ? `${parts.join('.')}.*` : `*.${parts.join('.')}`);
  }
  return out.map((candidate) => candidate.toLowerCase());
}

/**
 * An IP as Java's `InetAddress.getHostAddress()` writes it, the form the client checks: IPv4
 * dotted (an IPv4-mapped IPv6 address is its IPv4), IPv6 as eight groups without leading
 * zeros and without `::` (`0:0:0:0:0:0:0:1`).
 */
export function javaHostAddress(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const address = ipaddr.process(ip);
  return address.kind() === 'ipv4' ? address.toString() : (address as ipaddr.IPv6).toNormalizedString();
}

/** SHA-1 hex of the text as ISO-8859-1 bytes (Java's encoder writes `?` for other characters). */
function sha1(text: string): string {
  const latin1 = text.replace(/[^\u0000-\u00ff]/gu, '?');
  return createHash('sha1').update(latin1, 'latin1').digest('hex');
}

/** Parses the list; throws when a non-empty line is not a SHA-1 (an error page is not a list). */
export function parseBlocklist(body: string): Set<string> {
  const hashes = new Set<string>();
  for (const line of body.split(/\r?\n/)) {
    const hash = line.trim().toLowerCase();
    if (hash === '') continue;
    if (!SHA1_HEX.test(hash)) throw new Error('the blocklist holds a line that is not a SHA-1');
    hashes.add(hash);
  }
  return hashes;
}

export interface BlocklistOptions {
  source: BlocklistSource;
  refreshMinutes: number;
  onError?: (error: unknown, context: string) => void;
}

export class Blocklist {
  private hashes: Set<string> | null = null;
  private timer: NodeJS.Timeout | undefined;
  private loading: Promise<boolean> | undefined;
  private controller = new AbortController();
  /** Bumped on every successful load, so memoised answers know when to recompute. */
  version = 0;

  constructor(private readonly options: BlocklistOptions) {}

  /** Entries of the loaded list; null before the first successful load. */
  get size(): number | null {
    return this.hashes?.size ?? null;
  }

  /** True or false for `hosts` (typed name, SRV target, IP in Java's form); null while no list is loaded. */
  isBlocked(...hosts: (string | null | undefined)[]): boolean | null {
    const hashes = this.hashes;
    if (!hashes) return null;
    for (const host of hosts) {
      if (!host) continue;
      for (const candidate of blocklistCandidates(host)) if (hashes.has(sha1(candidate))) return true;
    }
    return false;
  }

  /** Loads the list once now; false (keeping the last good copy) when it fails. */
  load(): Promise<boolean> {
    this.loading ??= this.fetchList()
      .then((body) => {
        this.hashes = parseBlocklist(body);
        this.version += 1;
        return true;
      })
      .catch((error: unknown) => {
        this.options.onError?.(error, 'loading the blocklist');
        return false;
      })
      .finally(() => {
        this.loading = undefined;
      });
    return this.loading;
  }

  /** Loads now, then every `refreshMinutes`. */
  start(): Promise<boolean> {
    if (!this.timer) {
      this.timer = setInterval(() => void this.load(), this.options.refreshMinutes * 60_000);
      this.timer.unref();
    }
    return this.load();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.controller.abort();
    this.controller = new AbortController();
  }

  private async fetchList(): Promise<string> {
    const { source } = this.options;
    if (source.kind === 'file') {
      const bytes = await readFile(source.path);
      if (bytes.length > MAX_LIST_BYTES) throw new Error('the blocklist file is too large');
      return bytes.toString('utf8');
    }
    const response = await fetch(source.url, {
      signal: AbortSignal.any([this.controller.signal, AbortSignal.timeout(FETCH_TIMEOUT_MS)]),
      redirect: 'error',
    });
    if (!response.ok || !response.body) throw new Error(`blocklist fetch answered ${response.status}`);
    const chunks: Buffer[] = [];
    let size = 0;
    const reader = response.body.getReader();
    try {
      for (let read = await reader.read(); !read.done; read = await reader.read()) {
        size += read.value.length;
        if (size > MAX_LIST_BYTES) throw new Error('the blocklist is too large');
        chunks.push(Buffer.from(read.value));
      }
    } finally {
      void reader.cancel().catch(() => undefined);
    }
    return Buffer.concat(chunks).toString('utf8');
  }
}

/**
 * Adds `blocked` to every Java answer of `inner` (Bedrock servers are not on Mojang's list).
 * The flag is computed per answer, not cached with the status, so a reloaded list applies at
 * once; the decorated status is memoised per cached status object and list version.
 */
export function withBlockedFlag(inner: StatusLookup, blocklist: Blocklist | null): StatusLookup {
  const memo = new WeakMap<object, { version: number; status: StatusAnswer['status'] }>();
  const flagged = (answer: StatusAnswer, mode: QueryMode): StatusAnswer => {
    if (mode === 'bedrock') return answer;
    const version = blocklist?.version ?? -1;
    const known = memo.get(answer.status);
    if (known && known.version === version) return { ...answer, status: known.status };
    const s = answer.status;
    const blocked = blocklist ? blocklist.isBlocked(s.query.host, s.srvRecord?.target, s.ip_address ? javaHostAddress(s.ip_address) : null) : null;
    const status = { ...s, blocked };
    memo.set(s, { version, status });
    return { ...answer, status };
  };
  return {
    async lookup(address, mode, options) {
      return flagged(await inner.lookup(address, mode, options), mode);
    },
    cached(address, mode, options) {
      const answer = inner.cached?.(address, mode, options);
      return answer && flagged(answer, mode);
    },
  };
}
