/**
 * The one reader of process.env. Every variable in docs/configuration.md is parsed and checked
 * here, once, at start-up; an invalid value throws a ConfigError whose message is one line
 * naming the variable and what it allows. A new variable goes into that document too.
 */
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import ipaddr from 'ipaddr.js';
import { DEFAULT_CACHE_MEMORY_MB } from '../core/cache-budget.js';
import { ConfigError } from './error.js';
import { parseTracing, type TracingConfig } from './tracing.js';

export { ConfigError };
export type { TracingConfig };

export interface Config {
  port: number;
  host: string;
  /** `sqlite:PATH` or `postgres://...`; default SQLite file. */
  database: { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };
  redisUrl: string | null;
  /** Longest wait on one Redis command before the instance falls back to its local state. */
  redisCommandTimeoutMs: number;
  /** DNS servers as `ip` or `ip:port`; empty means the system resolver. */
  dnsServers: string[];
  /** CIDRs exempt from the public-address guard. */
  targetAllowlist: string[];
  /**
   * Whose X-Forwarded-For to believe: false (nobody), true (the immediate peer, one hop,
   * whatever it is) or the CIDRs of the trusted proxies.
   */
  trustProxy: boolean | readonly string[];
  maintenanceMode: boolean;
  rateLimits: { status: number; general: number; media: number; vote: number };
  statusCacheTtlSeconds: number;
  pingTimeoutMs: number;
  /** Pings in flight at once before the service serves stale results instead of queueing. */
  maxConcurrentPings: number;
  /** Days raw checks are kept (the 24-hour history reads them; at least 25 hours are kept). */
  checkRetentionDays: number;
  /** Days hourly rollups are kept (the 7- and 30-day history, uptime); a server is forgotten past both. */
  rollupRetentionDays: number;
  logLevel: string;
  /** LOG_REQUESTS: one access line per request (errors, warnings and slow requests are always logged). */
  logRequests: boolean;
  /** ICMP echo mode (`auto`: raw sockets where permitted, else none; `off`). */
  icmp: 'auto' | 'off';
  /** History rows (checks, look-ups) buffered while the database is unreachable. */
  historyBufferMax: number;
  /** Bearer token for GET /metrics (null: the route is off). */
  metricsToken: string | null;
  /** Port of a separate listener on 127.0.0.1 serving /metrics (null: none). */
  metricsPort: number | null;
  /** Mojang's blocked-servers list (BLOCKLIST_SOURCE); null: `blocked` is null. */
  blocklistSource: BlocklistSource | null;
  blocklistRefreshMinutes: number;
  /** Background refresher: servers looked up in the last `refreshWindowMinutes`; 0 pings a minute turns it off. */
  refreshWindowMinutes: number;
  refreshPingsPerMinute: number;
  /** Admission control for renders and pings (docs/hostile-clients.md). */
  admission: { renderSlots: number; renderQueue: number; maxEventLoopDelayMs: number };
  /** Worker threads images are drawn in (RENDER_THREADS; src/render/pool.ts). */
  renderThreads: number;
  /** HTTP limits (docs/hostile-clients.md). */
  http: {
    bodyLimitBytes: number;
    headersTimeoutMs: number;
    requestTimeoutMs: number;
    keepAliveTimeoutMs: number;
    maxConnectionsPerClient: number;
  };
  /** Addresses of one name a look-up may try, one per family first (LOOKUP_MAX_ADDRESSES). */
  lookupMaxAddresses: number;
  /** Look-ups that may ping one destination IP per minute, across all names and clients. */
  targetPingsPerMinute: number;
  /** Servers Observer does not know yet that one client may have recorded per day. */
  newServersPerClientPerDay: number;
  /** Memory the in-process caches share, in MiB (CACHE_MEMORY_MB; src/core/cache-budget.ts). */
  cacheMemoryMb: number;
  /** Flap damping (src/status/damping.ts): failures in a row, and minutes, before a success stops being served. */
  damping: { failures: number; minutes: number };
  /** Watches and their webhook deliveries (docs/watches.md). */
  watches: WatchSettings;
  /** Public base URL of the web front, for links in deliveries (PUBLIC_URL); null: deliveries carry no link. */
  publicUrl: string | null;
  /** GET /probe, Prometheus text for one server (PROBE_ENABLED); off: the route answers 404. */
  probeEnabled: boolean;
  /** POST /vote, Votifier test votes (VOTES_ENABLED); off: the route answers 404. */
  votesEnabled: boolean;
  /** Traces exported over OTLP (OTEL_* variables, ./tracing.ts); null: no tracing, nothing of OpenTelemetry loaded. */
  tracing: TracingConfig | null;
}

export interface WatchSettings {
  /** Unverified watches one client may hold (WATCHES_UNVERIFIED_PER_CLIENT). */
  unverifiedPerClient: number;
  /** Watches, verified or not, one client (IPv4 address, IPv6 /48) may hold (WATCHES_PER_CLIENT). */
  perClient: number;
  /** Verified watches of one server (WATCHES_PER_SERVER). */
  perServer: number;
  /** Verified watches in all (WATCHES_MAX): at most what the check budget can serve at the interval. */
  max: number;
  /** Hours an unverified watch waits for its owner's proof before it expires (WATCH_VERIFY_HOURS). */
  verifyHours: number;
  /** Days a verified watch may go without its proof being seen before it is paused (WATCH_PROOF_GRACE_DAYS). */
  proofGraceDays: number;
  /** Minutes between two checks of a watched server (WATCH_INTERVAL_MINUTES). */
  intervalMinutes: number;
  /** Watch checks per minute, cache hits included, all watches together (WATCH_CHECKS_PER_MINUTE); 0 stops checking. */
  checksPerMinute: number;
  /** Attempts of one delivery before it is given up (WATCH_DELIVERY_ATTEMPTS). */
  deliveryAttempts: number;
  /** Deadline of one delivery attempt, connect to last byte (WATCH_DELIVERY_TIMEOUT_MS). */
  deliveryTimeoutMs: number;
  /** Deliveries in flight at once on one instance (WATCH_DELIVERY_CONCURRENCY). */
  deliveryConcurrency: number;
  /** Deliveries a minute to one webhook host, all watches together (WATCH_DELIVERIES_PER_HOST_PER_MINUTE). */
  deliveriesPerHostPerMinute: number;
  /** Hours an event may wait for its delivery before it is given up, and finished events are kept (WATCH_EVENT_HOURS). */
  eventHours: number;
  /** Days a delivery attempt stays in a watch's log (WATCH_LOG_DAYS). */
  logDays: number;
  /** CIDRs a webhook may reach although they are not public (WEBHOOK_ALLOWLIST). */
  webhookAllowlist: string[];
  /** Key the signing secrets and client hashes of watches derive from (WATCH_SECRET); null: keys kept in the database. */
  secret: string | null;
}

/**
 * The share of the check budget watches may take at their interval: the rest is kept for
 * rechecks of undecided answers and for looking for owners' proofs (docs/hostile-clients.md).
 */
export const WATCH_BUDGET_SHARE = 0.9;

/** How many watches WATCH_CHECKS_PER_MINUTE can check every WATCH_INTERVAL_MINUTES, with the reserve kept. */
export function watchCapacity(checksPerMinute: number, intervalMinutes: number): number {
  return Math.floor(checksPerMinute * intervalMinutes * WATCH_BUDGET_SHARE);
}

function parseWatchSettings(env: Env): WatchSettings {
  const intervalMinutes = integer(env, 'WATCH_INTERVAL_MINUTES', 5, 1, 1_440);
  const checksPerMinute = watchChecksPerMinute(env);
  const capacity = watchCapacity(checksPerMinute, intervalMinutes);
  const max = integer(env, 'WATCHES_MAX', capacity, 0, capacity, '(WATCH_CHECKS_PER_MINUTE × WATCH_INTERVAL_MINUTES × 0.9)');
  return {
    unverifiedPerClient: integer(env, 'WATCHES_UNVERIFIED_PER_CLIENT', 3, 1, 1_000),
    perClient: integer(env, 'WATCHES_PER_CLIENT', 10, 1, 100_000),
    perServer: integer(env, 'WATCHES_PER_SERVER', 5, 1, 100_000),
    max,
    verifyHours: integer(env, 'WATCH_VERIFY_HOURS', 24, 1, 720),
    proofGraceDays: integer(env, 'WATCH_PROOF_GRACE_DAYS', 7, 1, 365),
    intervalMinutes,
    checksPerMinute,
    deliveryAttempts: integer(env, 'WATCH_DELIVERY_ATTEMPTS', 5, 1, 20),
    deliveryTimeoutMs: integer(env, 'WATCH_DELIVERY_TIMEOUT_MS', 5_000, 500, 30_000),
    deliveryConcurrency: integer(env, 'WATCH_DELIVERY_CONCURRENCY', 8, 1, 256),
    deliveriesPerHostPerMinute: integer(env, 'WATCH_DELIVERIES_PER_HOST_PER_MINUTE', 60, 1, 100_000),
    eventHours: integer(env, 'WATCH_EVENT_HOURS', 24, 1, 168),
    logDays: integer(env, 'WATCH_LOG_DAYS', 30, 1, 365),
    webhookAllowlist: cidrList(env, 'WEBHOOK_ALLOWLIST'),
    secret: parseWatchSecret(env.WATCH_SECRET),
  };
}

/** WATCH_CHECKS_PER_MINUTE, or WATCH_PINGS_PER_MINUTE (the name older deployments set) when only that is set. */
function watchChecksPerMinute(env: Env): number {
  const set = (name: string) => env[name] !== undefined && env[name] !== '';
  if (set('WATCH_CHECKS_PER_MINUTE') || !set('WATCH_PINGS_PER_MINUTE')) return integer(env, 'WATCH_CHECKS_PER_MINUTE', 60, 0, 6_000);
  return integer(env, 'WATCH_PINGS_PER_MINUTE', 60, 0, 6_000);
}

function parseWatchSecret(raw: string | undefined): string | null {
  if (raw === undefined || raw === '') return null;
  if (!/^[\x21-\x7e]{32,}$/.test(raw)) throw new ConfigError('WATCH_SECRET', 'expected at least 32 printable characters without spaces', '(hidden)');
  return raw;
}

function parsePublicUrl(raw: string | undefined): string | null {
  if (raw === undefined || raw.trim() === '') return null;
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ConfigError('PUBLIC_URL', 'expected an http:// or https:// URL such as https://observer.example.net', raw);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search !== '' || url.hash !== '' || url.username !== '') {
    throw new ConfigError('PUBLIC_URL', 'expected an http:// or https:// URL such as https://observer.example.net', raw);
  }
  return url.href.replace(/\/+$/, '');
}

/** Where the blocklist comes from: a file, an https URL, or (tests) an http URL to a loopback host. */
export type BlocklistSource = { kind: 'file'; path: string } | { kind: 'url'; url: string };

function parseBlocklistSource(raw: string | undefined): BlocklistSource | null {
  if (raw === undefined || raw.trim() === '') return null;
  const value = raw.trim();
  if (!/^[a-z][a-z0-9+.-]*:/i.test(value) || /^[a-z]:[\\/]/i.test(value)) return { kind: 'file', path: value };
  const allowed = 'expected a file path, an https:// URL, or an http:// URL to a loopback host';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError('BLOCKLIST_SOURCE', allowed, raw);
  }
  if (url.protocol === 'https:') return { kind: 'url', url: url.href };
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const loopback = host === 'localhost' || (ipaddr.isValid(host) && ipaddr.process(host).range() === 'loopback');
  if (url.protocol === 'http:' && loopback) return { kind: 'url', url: url.href };
  throw new ConfigError('BLOCKLIST_SOURCE', allowed, raw);
}

type Env = Record<string, string | undefined>;

/** RENDER_THREADS by default: the cores less one for the event loop, at least one, at most four. */
export function defaultRenderThreads(cores: number): number {
  return Math.max(1, Math.min(4, cores - 1));
}

/** A whole number from `min` to `max`; `maxIs` says where a computed bound comes from. */
function integer(env: Env, name: string, fallback: number, min: number, max: number, maxIs = ''): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const allowed = `expected a whole number from ${min} to ${max}${maxIs === '' ? '' : ` ${maxIs}`}`;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, allowed, raw);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(name, allowed, raw);
  return value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const v = raw.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  throw new ConfigError(name, 'expected true or false', raw);
}

/** A comma list of CIDRs such as `127.0.0.0/8,::1/128`. */
function cidrList(env: Env, name: string): string[] {
  const cidrs = list(env, name);
  for (const cidr of cidrs) {
    try {
      ipaddr.parseCIDR(cidr);
    } catch {
      throw new ConfigError(name, 'expected a comma list of CIDRs such as 127.0.0.0/8,::1/128', env[name] ?? '');
    }
  }
  return cidrs;
}

function list(env: Env, name: string): string[] {
  const raw = env[name];
  if (raw === undefined) return [];
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/**
 * TRUST_PROXY: a boolean, or a comma list of the proxies' CIDRs (a bare IP is one address).
 * IPs are checked as strictly as Node parses them: `127.1` is not an IPv4 address here.
 */
function parseTrustProxy(env: Env): boolean | string[] {
  const raw = env.TRUST_PROXY;
  if (raw === undefined || raw.trim() === '' || !/[/.:]/.test(raw)) return boolean(env, 'TRUST_PROXY', false);
  return list(env, 'TRUST_PROXY').map((entry) => {
    const [ip = '', prefix, extra] = entry.split('/');
    const family = isIP(ip);
    const bits = family === 4 ? 32 : 128;
    if (family === 0 || extra !== undefined || (prefix !== undefined && (!/^\d{1,3}$/.test(prefix) || Number(prefix) > bits))) {
      throw new ConfigError('TRUST_PROXY', 'expected true, false or a comma list of proxy CIDRs such as 127.0.0.1/32,10.0.0.0/8', raw);
    }
    return `${ip}/${prefix ?? bits}`;
  });
}

function parseDnsServer(entry: string, raw: string): string {
  // ip, ip:port, [ipv6]:port or bare ipv6
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry);
  let ip: string;
  let port: string | undefined;
  if (bracketed) {
    ip = bracketed[1]!;
    port = bracketed[2];
  } else if (entry.split(':').length === 2) {
    [ip, port] = entry.split(':') as [string, string];
  } else {
    ip = entry;
  }
  const allowed = 'expected a comma list of ip or ip:port';
  // As strict as node:dns, which uses these: `127.1` or `0x7f.0.0.1` would pass ipaddr.js and
  // then crash setServers() at start-up.
  if (isIP(ip) === 0) throw new ConfigError('DNS_SERVERS', allowed, raw);
  if (port !== undefined && (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65535)) {
    throw new ConfigError('DNS_SERVERS', allowed, raw);
  }
  return entry;
}

function parseDatabase(raw: string | undefined): Config['database'] {
  if (raw === undefined || raw === '') return { kind: 'sqlite', path: './data/observer.db' };
  if (raw.startsWith('sqlite:')) {
    const path = raw.slice('sqlite:'.length);
    if (path === '') throw new ConfigError('DATABASE_URL', 'expected sqlite:PATH or postgres://...', raw);
    return { kind: 'sqlite', path };
  }
  if (/^postgres(ql)?:\/\//.test(raw)) {
    try {
      new URL(raw);
    } catch {
      throw new ConfigError('DATABASE_URL', 'expected sqlite:PATH or postgres://...', raw);
    }
    return { kind: 'postgres', url: raw };
  }
  throw new ConfigError('DATABASE_URL', 'expected sqlite:PATH or postgres://...', raw);
}

function icmpMode(raw: string | undefined): Config['icmp'] {
  if (raw === undefined || raw.trim() === '') return 'auto';
  const v = raw.trim().toLowerCase();
  if (v === 'auto' || v === 'off') return v;
  throw new ConfigError('ICMP', 'expected auto or off', raw);
}

export function loadConfig(env: Env = process.env): Readonly<Config> {
  const redis = env.REDIS_URL;
  if (redis !== undefined && redis !== '' && !/^rediss?:\/\//.test(redis)) {
    throw new ConfigError('REDIS_URL', 'expected redis://... or rediss://...', redis);
  }
  const dnsRaw = env.DNS_SERVERS ?? '';
  const allowRaw = env.TARGET_ALLOWLIST ?? '';
  const allowlist = list(env, 'TARGET_ALLOWLIST');
  for (const cidr of allowlist) {
    try {
      ipaddr.parseCIDR(cidr);
    } catch {
      throw new ConfigError('TARGET_ALLOWLIST', 'expected a comma list of CIDRs such as 127.0.0.0/8,::1/128', allowRaw);
    }
  }
  const host = env.HOST === undefined || env.HOST === '' ? '0.0.0.0' : env.HOST.trim();
  if (!ipaddr.isValid(host) && !/^[a-zA-Z0-9.-]+$/.test(host)) {
    throw new ConfigError('HOST', 'expected an IP address or host name to bind to', env.HOST ?? '');
  }
  const logLevel = env.LOG_LEVEL === undefined || env.LOG_LEVEL === '' ? 'info' : env.LOG_LEVEL;
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', 'expected fatal, error, warn, info, debug, trace or silent', logLevel);
  }
  const metricsToken = env.METRICS_TOKEN === undefined || env.METRICS_TOKEN === '' ? null : env.METRICS_TOKEN;
  if (metricsToken !== null && !/^[\x21-\x7e]{16,}$/.test(metricsToken)) {
    // Printable ASCII without spaces (it travels in an Authorization header).
    throw new ConfigError('METRICS_TOKEN', 'expected at least 16 printable characters without spaces', '(hidden)');
  }
  const metricsPort = env.METRICS_PORT === undefined || env.METRICS_PORT === '' ? null : integer(env, 'METRICS_PORT', 0, 0, 65535);
  const config: Config = {
    port: integer(env, 'PORT', 8080, 0, 65535),
    host,
    database: parseDatabase(env.DATABASE_URL),
    redisUrl: redis === undefined || redis === '' ? null : redis,
    redisCommandTimeoutMs: integer(env, 'REDIS_COMMAND_TIMEOUT_MS', 250, 10, 10_000),
    dnsServers: list(env, 'DNS_SERVERS').map((s) => parseDnsServer(s, dnsRaw)),
    targetAllowlist: allowlist,
    trustProxy: parseTrustProxy(env),
    maintenanceMode: boolean(env, 'MAINTENANCE_MODE', false),
    rateLimits: {
      status: integer(env, 'RATE_LIMIT_STATUS', 120, 1, 10_000_000),
      general: integer(env, 'RATE_LIMIT_GENERAL', 300, 1, 10_000_000),
      media: integer(env, 'RATE_LIMIT_MEDIA', 5000, 1, 10_000_000),
      vote: integer(env, 'RATE_LIMIT_VOTE', 10, 1, 10_000_000),
    },
    statusCacheTtlSeconds: integer(env, 'STATUS_CACHE_TTL', 60, 1, 86_400),
    pingTimeoutMs: integer(env, 'PING_TIMEOUT_MS', 5000, 100, 60_000),
    maxConcurrentPings: integer(env, 'MAX_CONCURRENT_PINGS', 256, 1, 100_000),
    checkRetentionDays: integer(env, 'CHECK_RETENTION_DAYS', 2, 1, 3650),
    rollupRetentionDays: integer(env, 'ROLLUP_RETENTION_DAYS', 30, 1, 3650),
    logLevel,
    logRequests: boolean(env, 'LOG_REQUESTS', false),
    icmp: icmpMode(env.ICMP),
    historyBufferMax: integer(env, 'HISTORY_BUFFER_MAX', 100_000, 1_000, 10_000_000),
    metricsToken,
    metricsPort,
    blocklistSource: parseBlocklistSource(env.BLOCKLIST_SOURCE),
    blocklistRefreshMinutes: integer(env, 'BLOCKLIST_REFRESH_MINUTES', 60, 1, 10_080),
    refreshWindowMinutes: integer(env, 'REFRESH_WINDOW_MINUTES', 30, 1, 1_440),
    refreshPingsPerMinute: integer(env, 'REFRESH_PINGS_PER_MINUTE', 30, 0, 6_000),
    admission: {
      renderSlots: integer(env, 'RENDER_CONCURRENCY', 2, 1, 64),
      renderQueue: integer(env, 'RENDER_QUEUE', 16, 0, 10_000),
      maxEventLoopDelayMs: integer(env, 'SHED_EVENT_LOOP_DELAY_MS', 200, 10, 10_000),
    },
    renderThreads: integer(env, 'RENDER_THREADS', defaultRenderThreads(availableParallelism()), 1, 64),
    http: {
      bodyLimitBytes: integer(env, 'HTTP_BODY_LIMIT_BYTES', 16_384, 1_024, 1_048_576),
      headersTimeoutMs: integer(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000, 1_000, 120_000),
      requestTimeoutMs: integer(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000, 1_000, 600_000),
      keepAliveTimeoutMs: integer(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 72_000, 1_000, 600_000),
      maxConnectionsPerClient: integer(env, 'MAX_CONNECTIONS_PER_CLIENT', 64, 1, 100_000),
    },
    lookupMaxAddresses: integer(env, 'LOOKUP_MAX_ADDRESSES', 4, 1, 4),
    targetPingsPerMinute: integer(env, 'TARGET_PINGS_PER_MINUTE', 30, 1, 100_000),
    newServersPerClientPerDay: integer(env, 'NEW_SERVERS_PER_CLIENT_PER_DAY', 100, 1, 1_000_000),
    cacheMemoryMb: integer(env, 'CACHE_MEMORY_MB', DEFAULT_CACHE_MEMORY_MB, 8, 65_536),
    damping: {
      failures: integer(env, 'DAMPING_FAILURES', 3, 1, 100),
      minutes: integer(env, 'DAMPING_MINUTES', 5, 0, 1_440),
    },
    watches: parseWatchSettings(env),
    publicUrl: parsePublicUrl(env.PUBLIC_URL),
    probeEnabled: boolean(env, 'PROBE_ENABLED', true),
    votesEnabled: boolean(env, 'VOTES_ENABLED', true),
    tracing: parseTracing(env),
  };
  if (config.http.requestTimeoutMs < config.http.headersTimeoutMs) {
    throw new ConfigError('HTTP_REQUEST_TIMEOUT_MS', 'expected at least HTTP_HEADERS_TIMEOUT_MS', env.HTTP_REQUEST_TIMEOUT_MS ?? '');
  }
  if (config.metricsPort !== null && config.metricsPort !== 0 && config.metricsPort === config.port) {
    throw new ConfigError('METRICS_PORT', 'expected a port other than PORT', env.METRICS_PORT ?? '');
  }
  return Object.freeze(config);
}
