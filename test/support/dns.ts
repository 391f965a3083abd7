/**
 * A private dnsmasq on a free loopback port, with records written for one test: lets a test
 * point an SRV record at a server that listens on an ephemeral port (the shared zone in
 * test/fixtures/dnsmasq.conf can only name fixed ports).
 */
import { spawn } from 'node:child_process';
import { freeUdpPort } from '../../scripts/ports.mjs';

export interface PrivateDns {
  /** `127.0.0.1:PORT`, for DNS_SERVERS. */
  server: string;
  close(): Promise<void>;
}

/** Ports tried before giving up: a free UDP port may still be taken for TCP, which dnsmasq also binds. */
const PORT_ATTEMPTS = 5;

/** `lines` are dnsmasq options such as `srv-host=_minecraft._tcp.a.test,b.test,31337,0,5`. */
export async function startPrivateDns(lines: string[]): Promise<PrivateDns> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnFreePort(lines);
    } catch (error) {
      if (attempt >= PORT_ATTEMPTS || !/Address already in use/.test(String(error))) throw error;
    }
  }
}

async function startOnFreePort(lines: string[]): Promise<PrivateDns> {
  const port = await freeUdpPort();
  const child = spawn(
    'dnsmasq',
    [
      '--keep-in-foreground',
      `--port=${port}`,
      '--listen-address=127.0.0.1',
      '--bind-interfaces',
      '--no-resolv',
      '--no-hosts',
      '--no-poll',
      '--conf-file=/dev/null',
      '--pid-file',
      ...(process.getuid?.() === 0 ? ['--user=root'] : []),
      ...lines.map((line) => `--${line}`),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // dnsmasq outlives a test worker that ends without closing it (a timed-out test): stop it
  // when this process exits, however the test ended.
  const stop = () => {
    if (child.exitCode === null) child.kill('SIGTERM');
  };
  process.once('exit', stop);
  // Ready once it answers; it fails fast (exit) when the port was taken in between.
  const { Resolver } = await import('node:dns/promises');
  const resolver = new Resolver({ timeout: 200, tries: 1 });
  resolver.setServers([`127.0.0.1:${port}`]);
  // dnsmasq starts in a few milliseconds, but a loaded machine may take seconds.
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) {
      process.off('exit', stop);
      throw new Error(`dnsmasq exited: ${stderr.trim()}`);
    }
    try {
      await resolver.resolveSrv('_probe._tcp.ready.invalid');
      break;
    } catch (error) {
      // Any DNS answer (REFUSED, NXDOMAIN, no data) means it is up.
      const code = (error as { code?: string }).code;
      if (code !== 'ETIMEOUT' && code !== 'ECONNREFUSED') break;
      if (Date.now() > deadline) {
        stop();
        throw new Error(`dnsmasq did not answer on port ${port}: ${stderr.trim()}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return {
    server: `127.0.0.1:${port}`,
    async close() {
      process.off('exit', stop);
      stop();
      await exited;
    },
  };
}
