/**
 * Entry point: config → dependencies (compose.ts; a new database gets its tables here) →
 * listen → the schema migrations of an upgrade. Shuts down gracefully on SIGTERM/SIGINT: stops
 * accepting, finishes requests in flight, then closes the stores (a migration running stops
 * after its transaction in progress).
 */
import { composeApp } from './compose.js';
import { loadConfig, ConfigError, type Config } from './config/index.js';
import { MigrationStoppedError, StoreOpenError } from './store/index.js';

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

// Before any store work: a stop asked for while the store opens or migrates is honoured (a
// migration stops after its transaction in progress; the next start resumes it).
let stopSignal: string | null = null;
let stop: ((signal: string) => void) | null = null;
function onSignal(signal: string): void {
  if (stopSignal !== null) return;
  stopSignal = signal;
  stop?.(signal);
}
process.on('SIGTERM', () => onSignal('SIGTERM'));
process.on('SIGINT', () => onSignal('SIGINT'));

const { app, startBackground, migrate } = await composeApp(config, { migrateLater: true }).catch((error: unknown) => {
  // A database Observer cannot use: one line that names it, nothing written to it.
  if (!(error instanceof StoreOpenError)) throw error;
  process.stderr.write(`observer: ${error.message}\n`);
  process.exit(1);
});

async function shutdown(signal: string): Promise<void> {
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
stop = (signal) => void shutdown(signal);
if (stopSignal !== null) stop(stopSignal);

try {
  // Listening first: while the migrations of an upgrade run, status look-ups are answered,
  // health reports the migration, and stored data answers 503 `migrating`.
  if (stopSignal === null) await app.listen({ port: config.port, host: config.host });
} catch (error) {
  app.log.error({ err: error }, 'could not listen');
  process.exit(1);
}
if (stopSignal === null) {
  // A failed migration stops the instance; one stopped by a signal is resumed by the next start.
  migrate().catch((error: unknown) => {
    if (stopSignal !== null) {
      // The one line that says where the stop left the upgrade.
      if (error instanceof MigrationStoppedError) app.log.info(error.message);
      return;
    }
    app.log.error({ err: error }, 'migration failed; the database is left as the last committed step made it');
    process.exit(1);
  });
  // After listen: a slow blocklist download must not delay serving (`blocked` is null until then).
  void startBackground();
}
