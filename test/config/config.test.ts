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
