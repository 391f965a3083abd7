/**
 * Debian's nginx running deploy/nginx.conf on loopback, with its listen port, upstream ports,
 * pid, log and temp paths replaced by the test's own (its own prefix directory).
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../scripts/ports.mjs';

export interface RunningNginx {
  port: number;
  url: string;
  stop(): Promise<void>;
}

/** deploy/nginx.conf with the given listen port and upstreams, everything else under `prefix`. */
export function nginxConfig(listenPort: number, upstreamPorts: number[], prefix: string): string {
  let conf = readFileSync(new URL('../../deploy/nginx.conf', import.meta.url), 'utf8');
  conf = conf.replace(/^pid .*;$/m, `pid ${join(prefix, 'nginx.pid')};`);
  conf = conf.replace(/^error_log .*;$/m, `error_log ${join(prefix, 'error.log')} warn;`);
  conf = conf.replace(/(\w+_temp_path) \/var\/lib\/nginx\/(\w+);/g, (_m, directive: string, name: string) => `${directive} ${join(prefix, 'temp', name)};`);
  conf = conf.replace(/^\s*listen 80;$/m, `        listen 127.0.0.1:${listenPort};`);
  // The instances' lines, and their backup lines, each for the given ports.
  for (const kind of ['max_fails=3 fail_timeout=5s', 'backup max_fails=0']) {
    const servers = upstreamPorts.map((p) => `        server 127.0.0.1:${p} ${kind};`).join('\n');
    conf = conf.replace(new RegExp(`(^\\s*server 127\\.0\\.0\\.1:\\d+ ${kind};\\n)+`, 'm'), `${servers}\n`);
  }
  if (!conf.includes(`listen 127.0.0.1:${listenPort};`) || upstreamPorts.some((p) => conf.split(`127.0.0.1:${p} `).length !== 3)) {
    throw new Error('deploy/nginx.conf no longer has the lines the test templates');
  }
  return conf;
}

export async function startNginx(upstreamPorts: number[]): Promise<RunningNginx> {
  const prefix = mkdtempSync(join(tmpdir(), 'observer-nginx-'));
  mkdirSync(join(prefix, 'temp'));
  chmodSync(prefix, 0o755);
  chmodSync(join(prefix, 'temp'), 0o777);
  const port = await freePort();
  const conf = join(prefix, 'nginx.conf');
  writeFileSync(conf, nginxConfig(port, upstreamPorts, prefix));
  execFileSync('nginx', ['-t', '-q', '-p', prefix, '-c', conf], { stdio: 'pipe' });
  const child = spawn('nginx', ['-p', prefix, '-c', conf, '-g', 'daemon off;'], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i += 1) {
    try {
      // Health: never rate-limited, so probing costs the tests no budget.
      await fetch(`${url}/api/v1/status`);
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    port,
    url,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGQUIT');
        const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(force);
      }
      rmSync(prefix, { recursive: true, force: true });
    },
  };
}
