/**
 * Entry point: config → dependencies (compose.ts) → listen. Shuts down gracefully on
 * SIGTERM/SIGINT: stops accepting, finishes requests in flight, then closes the stores.
 */
import { composeApp } from './compose.js';
import { loadConfig, ConfigError, type Config } from './config/index.js';
import { StoreOpenError } from './store/index.js';

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

const { app, startBackground } = await composeApp(config).catch((error: unknown) => {
  // A database Observer cannot use: one line that names it, nothing written to it.
  if (!(error instanceof StoreOpenError)) throw error;
  process.stderr.write(`observer: ${error.message}\n`);
  process.exit(1);
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
  // After listen: a slow blocklist download must not delay serving (`blocked` is null until then).
  void startBackground();
} catch (error) {
  app.log.error({ err: error }, 'could not listen');
  process.exit(1);
}
