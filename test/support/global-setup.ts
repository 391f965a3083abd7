import { execFileSync } from 'node:child_process';

/**
 * Makes sure the loopback servers the tests use are up (dnsmasq, PostgreSQL, Redis).
 * `npm test` has already started them; this covers a direct `npx vitest` run.
 */
export default function setup(): void {
  execFileSync('bash', ['scripts/services.sh', 'up'], { stdio: ['ignore', 'ignore', 'inherit'] });
}
