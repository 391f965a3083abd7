/**
 * A PostgreSQL server of the test's own (initdb into a temp dir, a free loopback port), to
 * stop and start at will: the shared one from scripts/services.sh is never touched.
 */
import { execFileSync } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../scripts/ports.mjs';

export interface PrivatePostgres {
  url: string;
  /** `pg_ctl start`, waiting until it accepts connections. */
  start(): void;
  /** `pg_ctl stop -m immediate`: like a crash. */
  stop(): void;
  /** Stops it (if running) and removes its files. */
  remove(): void;
}

/** `fsync`: off by default (tests need no durability); on for a benchmark that measures writes as a real server makes them. */
export async function startPrivatePostgres(options: { fsync?: boolean } = {}): Promise<PrivatePostgres> {
  const bin = `/usr/lib/postgresql/${readdirSync('/usr/lib/postgresql').sort().at(-1)!}/bin`;
  const dir = mkdtempSync(join(tmpdir(), 'observer-pg-'));
  const data = join(dir, 'data');
  const asPostgres = (program: string, args: string[]) => {
    const root = process.getuid?.() === 0;
    const command = root ? 'runuser' : join(bin, program);
    const full = root ? ['-u', 'postgres', '--', join(bin, program), ...args] : args;
    execFileSync(command, full, { stdio: 'ignore', timeout: 60_000 });
  };
  if (process.getuid?.() === 0) {
    const uid = execFileSync('id', ['-u', 'postgres']).toString().trim();
    const gid = execFileSync('id', ['-g', 'postgres']).toString().trim();
    chownSync(dir, Number(uid), Number(gid));
  }
  asPostgres('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  const port = await freePort();
  const start = () =>
    asPostgres('pg_ctl', [
      '-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60',
      '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=${options.fsync ? 'on' : 'off'}`, 'start',
    ]);
  const stop = () => asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
  start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop,
    remove() {
      try {
        stop();
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
