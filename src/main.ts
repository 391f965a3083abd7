/**
 * Composition root: config → dependencies → buildApp → listen. Shuts down gracefully on
 * SIGTERM/SIGINT: stops accepting, finishes requests in flight, then closes the stores.
 */
import { Redis } from 'ioredis';
import { loadConfig, ConfigError, type Config } from './config/index.js';
import { ClientHasher } from './core/client-hash.js';
import { systemClock } from './core/clock.js';
import { RedisDailySecret } from './core/redis-secret.js';
import { buildApp } from './http/app.js';
import { createStatusService } from './status/index.js';
import { RedisStatusCache } from './status/redis-cache.js';
import { openStore } from './store/index.js';

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`observer: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
}

const clock = systemClock;
const redis = config.redisUrl ? new Redis(config.redisUrl, { maxRetriesPerRequest: 2, enableOfflineQueue: true }) : null;
let logError: (error: unknown, context: string) => void = (error, context) =>
  process.stderr.write(`observer: ${context}: ${String(error)}\n`);
const store = await openStore(config, clock, { onError: (error) => logError(error, 'history store') });
const hasher = new ClientHasher(clock, redis ? new RedisDailySecret(redis) : null, (error) => logError(error, 'daily secret'));
await hasher.ready();
const status = createStatusService({
  config,
  clock,
  store,
  ...(redis ? { cache: new RedisStatusCache(redis) } : {}),
  onError: (error, context) => logError(error, context),
});
const app = await buildApp({ config, clock, redis, hasher, status, store });
logError = (error, context) => app.log.warn({ err: error, context }, 'background error');
app.addHook('onClose', async () => {
  await store.close();
  await redis?.quit();
});

let closing = false;
async function shutdown(signal: string): Promise<void> {
  if (closing) return;
  closing = true;
  app.log.info({ signal }, 'shutting down');
  const force = setTimeout(() => {
    app.log.error('shutdown took too long, exiting');
    process.exit(1);
  }, 15_000);
  force.unref();
  // Keep-alive connections that go idle once their request is answered would hold close()
  // until their timeout: close each one as soon as it is idle.
  const idle = setInterval(() => app.server.closeIdleConnections(), 100);
  idle.unref();
  try {
    await app.close();
    process.exit(0);
  } catch (error) {
    app.log.error({ err: error }, 'error during shutdown');
    process.exit(1);
  }
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

try {
  await app.listen({ port: config.port, host: config.host });
} catch (error) {
  app.log.error({ err: error }, 'could not listen');
  process.exit(1);
}
