/**
 * Addresses of the loopback servers started by scripts/services.sh. dnsmasq has a fixed port;
 * PostgreSQL and Redis listen on ports chosen free when they started, passed by `npm test`
 * (OBSERVER_TEST_POSTGRES_URL, OBSERVER_TEST_REDIS_URL) or, in a direct `npx vitest` run, read
 * from the port files services.sh keeps in its runtime dir (the global setup has run it).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const runtime = process.env.OBSERVER_TEST_RUNTIME || '/tmp/observer-test-services';

function portFile(name: string): number {
  const file = join(runtime, name);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new Error(`${file} is missing: start the test servers with \`bash scripts/services.sh up\``);
  }
  const port = Number(text.trim());
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new Error(`${file}: not a port: ${JSON.stringify(text)}`);
  return port;
}

export const DNS_SERVER = '127.0.0.1:5353';
export const POSTGRES_URL =
  process.env.OBSERVER_TEST_POSTGRES_URL || `postgres://postgres@127.0.0.1:${portFile('postgres.port')}/postgres`;
export const REDIS_URL = process.env.OBSERVER_TEST_REDIS_URL || `redis://127.0.0.1:${portFile('redis-server.port')}`;
export const LOOPBACK_ALLOWLIST = ['127.0.0.0/8', '::1/128'];
