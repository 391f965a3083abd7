/**
 * podman and scripts/container.sh as the container tests run them: podman with this machine's
 * flags (scripts/container.sh podman), and the script's builds niced, their output in a log.
 */
import { execFile, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

export async function podman(...args: string[]): Promise<string> {
  const { stdout } = await run('bash', ['scripts/container.sh', 'podman', ...args], { timeout: 180_000, maxBuffer: 64 << 20 });
  return stdout.trim();
}

/**
 * A command of scripts/container.sh (`build`, `stand-ins`), niced (the rest of the suite shares
 * the cores), its progress in `log` as it goes (`tail -f` it); the last line it printed.
 */
export async function containerScript(command: string, log: string): Promise<string> {
  mkdirSync('.test-runtime', { recursive: true });
  const fd = openSync(log, 'w');
  const child = spawn('nice', ['-n', '10', 'bash', 'scripts/container.sh', command], { stdio: ['ignore', 'pipe', fd] });
  let stdout = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  closeSync(fd);
  if (code !== 0) {
    const tail = readFileSync(log, 'utf8').split('\n').slice(-40).join('\n');
    throw new Error(`scripts/container.sh ${command} exited ${code}:\n${tail}`);
  }
  return stdout.trim().split('\n').at(-1) ?? '';
}
