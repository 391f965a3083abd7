import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.js';

describe('loadConfig', () => {
  it('has the defaults of decisions.md', () => {
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
      rateLimits: { status: 120, general: 300, media: 5000 },
      statusCacheTtlSeconds: 60,
      pingTimeoutMs: 5000,
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
      STATUS_CACHE_TTL: '5',
      PING_TIMEOUT_MS: '1500',
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
      rateLimits: { status: 10, general: 20, media: 30 },
      statusCacheTtlSeconds: 5,
      pingTimeoutMs: 1500,
    });
    expect(loadConfig({ DATABASE_URL: 'sqlite:/tmp/x.db' }).database).toEqual({ kind: 'sqlite', path: '/tmp/x.db' });
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['HOST', 'not a host!'],
    ['DATABASE_URL', 'mysql://x'],
    ['DATABASE_URL', 'sqlite:'],
    ['REDIS_URL', 'http://127.0.0.1'],
    ['DNS_SERVERS', 'dns.example'],
    ['DNS_SERVERS', '127.0.0.1:99999'],
    ['TARGET_ALLOWLIST', '127.0.0.1'],
    ['TARGET_ALLOWLIST', '10.0.0.0/99'],
    ['TRUST_PROXY', 'maybe'],
    ['MAINTENANCE_MODE', 'yes please'],
    ['RATE_LIMIT_STATUS', '0'],
    ['RATE_LIMIT_GENERAL', '1.5'],
    ['RATE_LIMIT_MEDIA', 'lots'],
    ['STATUS_CACHE_TTL', '0'],
    ['PING_TIMEOUT_MS', '10'],
    // Issue 15: blocklist and background refresher.
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
});

describe('loadConfig: blocklist and background refresher (issue 15)', () => {
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
