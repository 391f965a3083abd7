/** Shared domain types: the shapes every layer agrees on. */
import type { ErrorCode } from './errors.js';

export type QueryMode = 'java' | 'legacy' | 'bedrock';
export type Edition = 'java' | 'bedrock';

export function editionOf(mode: QueryMode): Edition {
  return mode === 'bedrock' ? 'bedrock' : 'java';
}

/** Default ports: 25565 for Java and legacy, 19132 for Bedrock (docs/api.md, "Addresses"). */
export const DEFAULT_PORTS: Readonly<Record<Edition, number>> = { java: 25565, bedrock: 19132 };

/** `host`, or `host:port` when the port is not the edition's default; IPv6 in brackets. */
export function serverAddress(edition: Edition, host: string, port: number): string {
  if (port === DEFAULT_PORTS[edition]) return host;
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** MOTD in the forms the API returns (the Motd schema of the OpenAPI document; docs/api.md). */
export interface Motd {
  raw: string;
  clean: string;
  html: string;
  raw_lines: string[];
  clean_lines: string[];
  /**
   * The formatted MOTD every consumer draws from (JSON `html`, banners, the widget's script):
   * runs of text with one style, colours always `#rrggbb`. Absent only on statuses cached by a
   * version that did not send it.
   */
  segments?: MotdSpan[];
}

/** One run of MOTD text with one style (the MOTD module's segment, colour as `#rrggbb`). */
export interface MotdSpan {
  text: string;
  color: `#${string}` | null;
  bold: boolean;
  italic: boolean;
  underlined: boolean;
  strikethrough: boolean;
  obfuscated: boolean;
}

export interface PlayerSample {
  name: string;
  id: string;
}

/** What a successful Minecraft query yields, whatever the protocol. */
export interface PingResult {
  version: { name: string; protocol: number } | null;
  players: { online: number; max: number; sample: PlayerSample[] } | null;
  motd: Motd;
  /** `data:image/png;base64,...` or null; anything else is dropped by the client. */
  favicon: string | null;
  /** Milliseconds, measured by the protocol client. */
  latencyMs: number;
  /** Protocol-specific fields added to the response as they are (Bedrock GUID, mods, ...). */
  extra: Record<string, unknown>;
}

/** A protocol's result with its latency. */
export function withLatency(result: Omit<PingResult, 'latencyMs'>, latencyMs: number): PingResult {
  return { ...result, latencyMs };
}

/** The ServerStatus resource of the API (its schema is in src/http/schemas.ts). */
export interface ServerStatus {
  query: { host: string; port: number; legacy: boolean; bedrock: boolean };
  server_id: string | null;
  ip_address: string | null;
  icmp: boolean | null;
  online: boolean;
  error: string | null;
  /** Why the ping failed, one value of a documented enum; null when online. */
  error_code: ErrorCode | null;
  version: { name: string; protocol: number } | null;
  players: { online: number; max: number; sample: PlayerSample[] } | null;
  motd: Motd | null;
  favicon: string | null;
  roundTripLatency: number | null;
  stale: boolean;
  checked_at: string;
  srvRecord: SrvRecord | null;
  [extra: string]: unknown;
}

export interface SrvRecord {
  name: string;
  target: string;
  port: number;
  priority: number;
  weight: number;
}

/** A status with nothing known yet: offline, every optional field null. */
export function offlineStatus(query: ServerStatus['query'], fields: Partial<ServerStatus> = {}): ServerStatus {
  return {
    query,
    server_id: null,
    ip_address: null,
    icmp: null,
    online: false,
    error: null,
    error_code: null,
    version: null,
    players: null,
    motd: null,
    favicon: null,
    roundTripLatency: null,
    stale: false,
    checked_at: '',
    srvRecord: null,
    ...fields,
  };
}

/**
 * The stand-in of a name with no DNS records, which images and the widget draw as offline: one
 * builder, so both say the same. It has no check time (`checked_at: ''`): it depends on the
 * name alone, so an image of it has one cache entry and one ETag.
 */
export function unknownHostStatus(query: ServerStatus['query']): ServerStatus {
  return offlineStatus(query, { error: 'unknown host', error_code: 'dns_not_found' });
}
