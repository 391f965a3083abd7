import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config/index.js';
import { buildApp, type AppDeps } from '../../src/http/app.js';

/**
 * Config from an env map over the test defaults (loopback allowlists for targets and webhooks,
 * test DNS server). Load
 * shedding on event-loop lag is off unless a test sets SHED_EVENT_LOOP_DELAY_MS: fixture servers
 * run in the test's own process (bedrock-protocol's blocks it while starting), which a service
 * never shares its event loop with.
 */
export function testConfig(env: Record<string, string> = {}) {
  return loadConfig({ TARGET_ALLOWLIST: '127.0.0.0/8,::1/128', WEBHOOK_ALLOWLIST: '127.0.0.0/8,::1/128', DNS_SERVERS: '127.0.0.1:5353', SHED_EVENT_LOOP_DELAY_MS: '10000', ...env });
}

/** A pino destination that keeps every line, to assert on what was logged. */
export function logCapture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      cb();
    },
  });
  return { lines, stream };
}

export async function testApp(env: Record<string, string> = {}, deps: Partial<AppDeps> = {}) {
  const app = await buildApp({ config: testConfig(env), logger: false, ...deps });
  await app.ready();
  return app;
}
