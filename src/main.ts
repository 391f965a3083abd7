/**
 * Entry point: config → dependencies (compose.ts) → listen. Shuts down gracefully on
 * SIGTERM/SIGINT: stops accepting, finishes requests in flight, then closes the stores.
 */
import { composeApp } from './compose.js';
import { loadConfig, ConfigError, type Config } from './config/index.js';

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

const { app, startBackground } = await composeApp(config);

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
  releaseStartupMemory();
} catch (error) {
  app.log.error({ err: error }, 'could not listen');
  process.exit(1);
}

/**
 * Start-up (modules, schemas, migrations) grows V8's young generation to its largest, and V8
 * keeps those pages until it sees the process idle, which a service with timers rarely looks.
 * Full collections once start-up is over give them back (docs/performance.md#memory): V8
 * shrinks the young generation in a collection that finds little allocated since the one
 * before, hence two; the `last-resort` flavour also makes newer V8s (Node 26) give back what
 * they would otherwise keep. It needs `--expose-gc`, which the start script passes; without
 * it nothing happens.
 */
function releaseStartupMemory(): void {
  type GcOptions = { type: 'major'; execution: 'async'; flavor: 'last-resort' };
  const gc = (globalThis as { gc?: (options: GcOptions) => void }).gc;
  if (!gc) return;
  const collect = () => gc({ type: 'major', execution: 'async', flavor: 'last-resort' });
  for (const delayMs of [5_000, 10_000]) setTimeout(collect, delayMs).unref();
}

