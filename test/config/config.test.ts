import { Resolver } from 'node:dns';
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { ConfigError, defaultRenderThreads, loadConfig, type Config } from '../../src/config/index.js';

describe('loadConfig', () => {
  it('has the defaults of docs/configuration.md', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080,
      host: '0.0.0.0',
      database: { kind: 'sqlite', path: './data/observer.db' },
      redisUrl: null,
      dnsServers: [],
      targetAllowlist: [],
      trustProxy: false,
      maintenanceMode: false,
      rateLimits: { status: 120, general: 300, media: 5000, vote: 10 },
      statusCacheTtlSeconds: 60,
      pingTimeoutMs: 5000,
      icmp: 'auto',
      historyBufferMax: 100_000,
      cacheMemoryMb: 32,
      probeEnabled: true,
      votesEnabled: true,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads every variable', () => {
    const config = loadConfig({
      PORT: '9000',
      HOST: '127.0.0.1',
      DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db',
      REDIS_URL: 'redis://127.0.0.1:6379',
      DNS_SERVERS: '127.0.0.1:5353, ::1, [::1]:53',
      TARGET_ALLOWLIST: '127.0.0.0/8,::1/128',
      TRUST_PROXY: 'true',
      MAINTENANCE_MODE: '1',
      RATE_LIMIT_STATUS: '10',
      RATE_LIMIT_GENERAL: '20',
      RATE_LIMIT_MEDIA: '30',
      RATE_LIMIT_VOTE: '3',
      STATUS_CACHE_TTL: '5',
      PING_TIMEOUT_MS: '1500',
      ICMP: 'OFF',
      HISTORY_BUFFER_MAX: '5000',
      CACHE_MEMORY_MB: '256',
      PROBE_ENABLED: 'false',
      VOTES_ENABLED: 'off',
    });
    expect(config).toMatchObject({
      port: 9000,
      host: '127.0.0.1',
      database: { kind: 'postgres', url: 'postgres://u:p@127.0.0.1:5432/db' },
      redisUrl: 'redis://127.0.0.1:6379',
      dnsServers: ['127.0.0.1:5353', '::1', '[::1]:53'],
      targetAllowlist: ['127.0.0.0/8', '::1/128'],
      trustProxy: true,
      maintenanceMode: true,
      rateLimits: { status: 10, general: 20, media: 30, vote: 3 },
      statusCacheTtlSeconds: 5,
      pingTimeoutMs: 1500,
      icmp: 'off',
      historyBufferMax: 5000,
      probeEnabled: false,
      votesEnabled: false,
      cacheMemoryMb: 256,
    });
    expect(loadConfig({ DATABASE_URL: 'sqlite:/tmp/x.db' }).database).toEqual({ kind: 'sqlite', path: '/tmp/x.db' });
  });

  it('accepts only DNS_SERVERS that node:dns accepts too', () => {
    const { dnsServers } = loadConfig({ DNS_SERVERS: '127.0.0.1, 127.0.0.1:5353, ::1, [::1]:53' });
    expect(() => new Resolver().setServers(dnsServers)).not.toThrow();
  });

  it('reads TRUST_PROXY as a boolean or a comma list of proxy CIDRs', () => {
    expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: '127.0.0.1/32, 10.0.0.0/8,::1, fd00::/8' }).trustProxy).toEqual([
      '127.0.0.1/32',
      '10.0.0.0/8',
      '::1/128',
      'fd00::/8',
    ]);
  });

  it.each([
    ['ICMP', 'on'],
    ['HISTORY_BUFFER_MAX', '10'],
    ['HISTORY_BUFFER_MAX', 'lots'],
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['HOST', 'not a host!'],
    ['DATABASE_URL', 'mysql://x'],
    ['DATABASE_URL', 'sqlite:'],
    ['REDIS_URL', 'http://127.0.0.1'],
    ['DNS_SERVERS', 'dns.example'],
    ['DNS_SERVERS', '127.0.0.1:99999'],
    ['DNS_SERVERS', '127.1'],
    ['DNS_SERVERS', '127.1:53'],
    ['DNS_SERVERS', '0x7f.0.0.1'],
    ['TARGET_ALLOWLIST', '127.0.0.1'],
    ['TARGET_ALLOWLIST', '10.0.0.0/99'],
    ['TRUST_PROXY', 'maybe'],
    ['TRUST_PROXY', '127.1/32'],
    ['TRUST_PROXY', '10.0.0.0/33'],
    ['TRUST_PROXY', '10.0.0.0/8/1'],
    ['TRUST_PROXY', 'proxy.example'],
    ['MAINTENANCE_MODE', 'yes please'],
    ['PROBE_ENABLED', 'sometimes'],
    ['RATE_LIMIT_STATUS', '0'],
    ['RATE_LIMIT_GENERAL', '1.5'],
    ['RATE_LIMIT_MEDIA', 'lots'],
    ['RATE_LIMIT_VOTE', '0'],
    ['VOTES_ENABLED', 'maybe'],
    ['STATUS_CACHE_TTL', '0'],
    ['PING_TIMEOUT_MS', '10'],
    ['CACHE_MEMORY_MB', '7'],
    ['CACHE_MEMORY_MB', '65537'],
    ['CACHE_MEMORY_MB', '64MB'],
    // Blocklist and background refresher.
    ['BLOCKLIST_SOURCE', 'http://example.com/list'],
    ['BLOCKLIST_SOURCE', 'ftp://127.0.0.1/list'],
    ['BLOCKLIST_REFRESH_MINUTES', '0'],
    ['REFRESH_WINDOW_MINUTES', 'soon'],
    ['REFRESH_PINGS_PER_MINUTE', '-1'],
  ])('refuses %s=%s with one line naming the variable', (name, value) => {
    let error: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain(name);
    expect(message).not.toContain('\n');
  });

  it('reads CACHE_MEMORY_MB at both ends of its range', () => {
    expect(loadConfig({ CACHE_MEMORY_MB: '8' }).cacheMemoryMb).toBe(8);
    expect(loadConfig({ CACHE_MEMORY_MB: '65536' }).cacheMemoryMb).toBe(65_536);
  });

  it('reads LOG_REQUESTS: off by default, true/false, anything else refused', () => {
    expect(loadConfig({}).logRequests).toBe(false);
    expect(loadConfig({ LOG_REQUESTS: 'true' }).logRequests).toBe(true);
    expect(loadConfig({ LOG_REQUESTS: 'off' }).logRequests).toBe(false);
    expect(() => loadConfig({ LOG_REQUESTS: 'sometimes' })).toThrow(/LOG_REQUESTS/);
  });

  describe('REDIS_COMMAND_TIMEOUT_MS', () => {
    it('defaults to 250 ms and reads a value', () => {
      expect(loadConfig({}).redisCommandTimeoutMs).toBe(250);
      expect(loadConfig({ REDIS_COMMAND_TIMEOUT_MS: '100' }).redisCommandTimeoutMs).toBe(100);
    });

    it.each(['0', 'fast', '20000'])('refuses %s with one line naming the variable', (value) => {
      expect(() => loadConfig({ REDIS_COMMAND_TIMEOUT_MS: value })).toThrow(ConfigError);
      expect(() => loadConfig({ REDIS_COMMAND_TIMEOUT_MS: value })).toThrow(/^Invalid REDIS_COMMAND_TIMEOUT_MS=/);
    });
  });
});

describe('loadConfig: metrics (METRICS_TOKEN, METRICS_PORT)', () => {
  it('leaves metrics off by default', () => {
    expect(loadConfig({})).toMatchObject({ metricsToken: null, metricsPort: null });
  });

  it('reads the token and the loopback port', () => {
    const config = loadConfig({ METRICS_TOKEN: 'a-long-enough-token-123', METRICS_PORT: '9464' });
    expect(config).toMatchObject({ metricsToken: 'a-long-enough-token-123', metricsPort: 9464 });
    expect(loadConfig({ METRICS_PORT: '0' }).metricsPort).toBe(0);
  });

  it.each([
    ['METRICS_TOKEN', 'short'],
    ['METRICS_TOKEN', 'has a space in it, long enough'],
    ['METRICS_PORT', 'ninety'],
    ['METRICS_PORT', '70000'],
  ])('refuses %s=%s with one line naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`^Invalid ${name}=[^\\n]*$`));
  });

  it('never echoes a refused token', () => {
    expect(() => loadConfig({ METRICS_TOKEN: 'secret secret secret' })).toThrow(/^(?!.*secret)/);
  });

  it('refuses METRICS_PORT equal to PORT', () => {
    expect(() => loadConfig({ PORT: '8080', METRICS_PORT: '8080' })).toThrow(/METRICS_PORT/);
  });
});

describe('loadConfig: blocklist and background refresher', () => {
  it('has defaults: no list, hourly reloads, a 30-minute window at 30 pings a minute', () => {
    expect(loadConfig({})).toMatchObject({
      blocklistSource: null,
      blocklistRefreshMinutes: 60,
      refreshWindowMinutes: 30,
      refreshPingsPerMinute: 30,
    });
  });

  it('reads a file path, an https URL and an http URL to a loopback host', () => {
    const read = (source: string) => loadConfig({ BLOCKLIST_SOURCE: source }).blocklistSource;
    expect(read('./data/blockedservers.txt')).toEqual({ kind: 'file', path: './data/blockedservers.txt' });
    expect(read('/var/lib/observer/list')).toEqual({ kind: 'file', path: '/var/lib/observer/list' });
    expect(read('https://sessionserver.mojang.com/blockedservers')).toEqual({
      kind: 'url',
      url: 'https://sessionserver.mojang.com/blockedservers',
    });
    expect(read('http://127.0.0.1:8000/list')).toEqual({ kind: 'url', url: 'http://127.0.0.1:8000/list' });
    expect(read('http://[::1]:8000/list')).toEqual({ kind: 'url', url: 'http://[::1]:8000/list' });
    const config = loadConfig({ BLOCKLIST_REFRESH_MINUTES: '5', REFRESH_WINDOW_MINUTES: '10', REFRESH_PINGS_PER_MINUTE: '0' });
    expect(config).toMatchObject({ blocklistRefreshMinutes: 5, refreshWindowMinutes: 10, refreshPingsPerMinute: 0 });
  });
});

describe('loadConfig: admission control and HTTP limits', () => {
  it('draws in the cores less one by default, at least one thread and at most four', () => {
    expect([1, 2, 3, 4, 8, 64].map(defaultRenderThreads)).toEqual([1, 1, 2, 3, 4, 4]);
    expect(loadConfig({ RENDER_THREADS: '3' }).renderThreads).toBe(3);
  });

  it('has the defaults of docs/configuration.md', () => {
    expect(loadConfig({})).toMatchObject({
      admission: { renderSlots: 2, renderQueue: 16, maxEventLoopDelayMs: 200 },
      renderThreads: defaultRenderThreads(availableParallelism()),
      http: { bodyLimitBytes: 16_384, headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 72_000, maxConnectionsPerClient: 64 },
    });
  });

  // Each setting at both ends of its range, and one step past each.
  const ranges: Array<[string, number, number]> = [
    ['RENDER_CONCURRENCY', 1, 64],
    ['RENDER_QUEUE', 0, 10_000],
    ['RENDER_THREADS', 1, 64],
    ['SHED_EVENT_LOOP_DELAY_MS', 10, 10_000],
    ['HTTP_BODY_LIMIT_BYTES', 1_024, 1_048_576],
    ['HTTP_HEADERS_TIMEOUT_MS', 1_000, 120_000],
    ['HTTP_KEEP_ALIVE_TIMEOUT_MS', 1_000, 600_000],
    ['MAX_CONNECTIONS_PER_CLIENT', 1, 100_000],
  ];
  it.each(ranges)('%s takes %d to %d and refuses one past either end', (name, min, max) => {
    // The request timeout may not be shorter than the head timeout.
    const base = name === 'HTTP_HEADERS_TIMEOUT_MS' ? { HTTP_REQUEST_TIMEOUT_MS: '600000' } : {};
    expect(() => loadConfig({ ...base, [name]: String(min) })).not.toThrow();
    expect(() => loadConfig({ ...base, [name]: String(max) })).not.toThrow();
    for (const value of [min - 1, max + 1]) {
      expect(() => loadConfig({ ...base, [name]: String(value) })).toThrow(new RegExp(`^Invalid ${name}=`));
    }
  });

  it('takes HTTP_REQUEST_TIMEOUT_MS from the head timeout up, and refuses a shorter one', () => {
    expect(loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '5000', HTTP_REQUEST_TIMEOUT_MS: '5000' }).http.requestTimeoutMs).toBe(5000);
    expect(() => loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '5000', HTTP_REQUEST_TIMEOUT_MS: '4999' })).toThrow(/^Invalid HTTP_REQUEST_TIMEOUT_MS=/);
    expect(() => loadConfig({ HTTP_REQUEST_TIMEOUT_MS: '600001' })).toThrow(/^Invalid HTTP_REQUEST_TIMEOUT_MS=/);
  });
});

describe('loadConfig: limits a hostile client meets (docs/hostile-clients.md)', () => {
  const limits = [
    ['LOOKUP_MAX_ADDRESSES', 'lookupMaxAddresses', 4, 1, 4],
    ['TARGET_PINGS_PER_MINUTE', 'targetPingsPerMinute', 30, 1, 100_000],
    ['NEW_SERVERS_PER_CLIENT_PER_DAY', 'newServersPerClientPerDay', 100, 1, 1_000_000],
  ] as const;

  it.each(limits)('%s defaults to its documented value', (_variable, field, fallback) => {
    expect(loadConfig({})[field]).toBe(fallback);
  });

  it.each(limits)('%s accepts its bounds', (variable, field, _fallback, min, max) => {
    expect(loadConfig({ [variable]: String(min) })[field]).toBe(min);
    expect(loadConfig({ [variable]: String(max) })[field]).toBe(max);
  });

  it.each(limits)('%s refuses one past each bound with one line naming it', (variable, _field, _fallback, min, max) => {
    for (const value of [String(min - 1), String(max + 1), 'many']) {
      expect(() => loadConfig({ [variable]: value })).toThrow(ConfigError);
      expect(() => loadConfig({ [variable]: value })).toThrow(
        `Invalid ${variable}="${value}": expected a whole number from ${min} to ${max}`,
      );
    }
  });
});

/**
 * Whole-number settings of one group: each defaults to its documented value, accepts both ends
 * of its range, and refuses one past either end (and a word) with one line naming it.
 */
function wholeNumberSettings(settings: ReadonlyArray<readonly [variable: string, read: (config: Config) => number, fallback: number, min: number, max: number]>) {
  it.each(settings)('%s defaults to its documented value and accepts its bounds', (variable, read, fallback, min, max) => {
    expect(read(loadConfig({}))).toBe(fallback);
    expect(read(loadConfig({ [variable]: String(min) }))).toBe(min);
    expect(read(loadConfig({ [variable]: String(max) }))).toBe(max);
  });

  it.each(settings)('%s refuses one past each bound with one line naming it', (variable, _read, _fallback, min, max) => {
    for (const value of [String(min - 1), String(max + 1), 'soon']) {
      expect(() => loadConfig({ [variable]: value })).toThrow(`Invalid ${variable}="${value}": expected a whole number from ${min} to ${max}`);
    }
  });
}

describe('loadConfig: flap damping (docs/api.md, "Flap damping")', () => {
  wholeNumberSettings([
    ['DAMPING_FAILURES', (c) => c.damping.failures, 3, 1, 100],
    ['DAMPING_MINUTES', (c) => c.damping.minutes, 5, 0, 1_440],
  ]);
});

describe('loadConfig: watches (docs/watches.md)', () => {
  wholeNumberSettings([
    ['WATCHES_UNVERIFIED_PER_CLIENT', (c) => c.watches.unverifiedPerClient, 3, 1, 1_000],
    ['WATCH_VERIFY_HOURS', (c) => c.watches.verifyHours, 24, 1, 720],
    ['WATCH_INTERVAL_MINUTES', (c) => c.watches.intervalMinutes, 5, 1, 1_440],
    ['WATCH_CHECKS_PER_MINUTE', (c) => c.watches.checksPerMinute, 60, 0, 6_000],
    ['WATCH_DELIVERY_ATTEMPTS', (c) => c.watches.deliveryAttempts, 5, 1, 20],
    ['WATCH_DELIVERY_TIMEOUT_MS', (c) => c.watches.deliveryTimeoutMs, 5_000, 500, 30_000],
    ['WATCHES_PER_CLIENT', (c) => c.watches.perClient, 10, 1, 100_000],
    ['WATCHES_PER_SERVER', (c) => c.watches.perServer, 5, 1, 100_000],
    ['WATCH_PROOF_GRACE_DAYS', (c) => c.watches.proofGraceDays, 7, 1, 365],
    ['WATCH_DELIVERY_CONCURRENCY', (c) => c.watches.deliveryConcurrency, 8, 1, 256],
    ['WATCH_DELIVERIES_PER_HOST_PER_MINUTE', (c) => c.watches.deliveriesPerHostPerMinute, 60, 1, 100_000],
    ['WATCH_EVENT_HOURS', (c) => c.watches.eventHours, 24, 1, 168],
    ['WATCH_LOG_DAYS', (c) => c.watches.logDays, 30, 1, 365],
  ]);

  it('bounds WATCHES_MAX by what the check budget can look at every interval, a tenth kept for rechecks', () => {
    expect(loadConfig({}).watches.max).toBe(270);
    expect(loadConfig({ WATCH_CHECKS_PER_MINUTE: '10', WATCH_INTERVAL_MINUTES: '3' }).watches.max).toBe(27);
    expect(loadConfig({ WATCHES_MAX: '100' }).watches.max).toBe(100);
    expect(loadConfig({ WATCHES_MAX: '0' }).watches.max).toBe(0);
    expect(loadConfig({ WATCH_CHECKS_PER_MINUTE: '0' }).watches.max).toBe(0);
    expect(() => loadConfig({ WATCHES_MAX: '271' })).toThrow(
      'Invalid WATCHES_MAX="271": expected a whole number from 0 to 270 (WATCH_CHECKS_PER_MINUTE × WATCH_INTERVAL_MINUTES × 0.9)',
    );
    expect(() => loadConfig({ WATCHES_MAX: '50', WATCH_CHECKS_PER_MINUTE: '10', WATCH_INTERVAL_MINUTES: '5' })).toThrow(/^Invalid WATCHES_MAX="50": expected a whole number from 0 to 45 /);
  });

  it('still reads the former WATCH_PINGS_PER_MINUTE when WATCH_CHECKS_PER_MINUTE is not set', () => {
    expect(loadConfig({ WATCH_PINGS_PER_MINUTE: '12' }).watches.checksPerMinute).toBe(12);
    expect(loadConfig({ WATCH_PINGS_PER_MINUTE: '12', WATCH_CHECKS_PER_MINUTE: '30' }).watches.checksPerMinute).toBe(30);
    expect(() => loadConfig({ WATCH_PINGS_PER_MINUTE: 'many' })).toThrow('Invalid WATCH_PINGS_PER_MINUTE="many"');
  });

  it('reads WEBHOOK_ALLOWLIST as CIDRs apart from TARGET_ALLOWLIST, empty by default', () => {
    expect(loadConfig({ TARGET_ALLOWLIST: '127.0.0.0/8' }).watches.webhookAllowlist).toEqual([]);
    expect(loadConfig({ WEBHOOK_ALLOWLIST: '127.0.0.0/8, ::1/128' }).watches.webhookAllowlist).toEqual(['127.0.0.0/8', '::1/128']);
    expect(() => loadConfig({ WEBHOOK_ALLOWLIST: '127.0.0.0/8,lan' })).toThrow(
      'Invalid WEBHOOK_ALLOWLIST="127.0.0.0/8,lan": expected a comma list of CIDRs such as 127.0.0.0/8,::1/128',
    );
  });

  it('reads WATCH_SECRET of 32 printable characters or more, never echoing a refused one', () => {
    expect(loadConfig({}).watches.secret).toBeNull();
    expect(loadConfig({ WATCH_SECRET: 's'.repeat(32) }).watches.secret).toBe('s'.repeat(32));
    for (const value of ['s'.repeat(31), `${'s'.repeat(32)} x`]) {
      expect(() => loadConfig({ WATCH_SECRET: value })).toThrow('Invalid WATCH_SECRET="(hidden)"');
    }
  });

  it('reads PUBLIC_URL as an http(s) origin or path prefix, without a trailing slash', () => {
    expect(loadConfig({}).publicUrl).toBeNull();
    expect(loadConfig({ PUBLIC_URL: 'https://observer.example.net/' }).publicUrl).toBe('https://observer.example.net');
    expect(loadConfig({ PUBLIC_URL: 'http://127.0.0.1:8080/observer/' }).publicUrl).toBe('http://127.0.0.1:8080/observer');
    for (const value of ['observer.example.net', 'ftp://observer.example.net', 'https://observer.example.net/?a=1', 'https://u@observer.example.net']) {
      expect(() => loadConfig({ PUBLIC_URL: value })).toThrow(/^Invalid PUBLIC_URL=/);
    }
  });
});

describe('loadConfig: traces (OTEL_* variables, docs/monitoring.md "Traces")', () => {
  it('leaves tracing off without an endpoint, or with OTEL_SDK_DISABLED=true', () => {
    expect(loadConfig({}).tracing).toBeNull();
    expect(loadConfig({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }).tracing).toBeNull();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }).tracing).toBeNull();
  });

  it('appends v1/traces to the base endpoint, and takes the traces endpoint as it is', () => {
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing).toEqual({
      tracesUrl: 'http://collector:4318/v1/traces',
      serviceName: 'observer',
      sampler: 'parentbased_always_on',
      ratio: 1,
    });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example.net/otlp/' }).tracing?.tracesUrl).toBe('https://otel.example.net/otlp/v1/traces');
    const both = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/custom/path' });
    expect(both.tracing?.tracesUrl).toBe('http://b:4318/custom/path');
  });

  it('reads the service name and the sampler', () => {
    const config = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_SERVICE_NAME: 'observer-eu',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    });
    expect(config.tracing).toMatchObject({ serviceName: 'observer-eu', sampler: 'parentbased_traceidratio', ratio: 0.25 });
  });

  it.each([
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318'],
    ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'ftp://collector/'],
    ['OTEL_TRACES_SAMPLER', 'jaeger_remote'],
    ['OTEL_TRACES_SAMPLER_ARG', '1.5'],
    ['OTEL_TRACES_SAMPLER_ARG', 'half'],
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc'],
    ['OTEL_SDK_DISABLED', 'maybe'],
  ])('refuses %s=%s, with a message naming it', (name, value) => {
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', [name]: value })).toThrow(name);
  });
});
