import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config/index.js';
import { buildApp, type AppDeps } from '../../src/http/app.js';

/**
 * Config from an env map over the test defaults (loopback allowlists for targets and webhooks,
 * test DNS server). A test that is not about shedding is not shed: event-loop lag is judged
 * only past 10 s (fixture servers run in the test's own process, and bedrock-protocol's blocks
 * it while starting, which a service never shares its event loop with), and a render slot is
 * free for every image a test asks for at once (on a loaded machine a cold render thread can
 * take longer than a queued render's 2 s wait). Tests of admission set their own values.
 */
export function testConfig(env: Record<string, string> = {}) {
  return loadConfig({
    TARGET_ALLOWLIST: '127.0.0.0/8,::1/128',
    WEBHOOK_ALLOWLIST: '127.0.0.0/8,::1/128',
    DNS_SERVERS: '127.0.0.1:5353',
    SHED_EVENT_LOOP_DELAY_MS: '10000',
    RENDER_CONCURRENCY: '16',
    ...env,
  });
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
