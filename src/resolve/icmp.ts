/**
 * One ICMP echo (RFC 792 / RFC 4443 echo request) through the system `ping`, so the process needs
 * no raw-socket capability of its own. Written for iputils-ping: `-n` (no reverse look-up),
 * `-c 1` (one echo), `-W <s>` (seconds to wait for the reply), `-4`/`-6` (family). Exit status
 * 0 means a reply came, 1 that none did, 2 an error (iputils ping(8), "EXIT STATUS").
 *
 * The caller passes an IP the guard has already checked. `execFile` runs `ping` with no shell,
 * so the argument is never interpreted; it is also checked to be a strict IP, never an option.
 */
import { execFile } from 'node:child_process';
import { isIP } from 'node:net';

export interface IcmpOptions {
  /** How long to wait for the reply, rounded up to whole seconds for `-W`. Default 2000 ms. */
  timeoutMs?: number;
  /** The ping program; `ping` from PATH unless given. */
  command?: string;
}

/**
 * True when the echo was answered, false when it was not (no reply within the wait, network
 * unreachable, or `signal` aborted first), null when ICMP is not available to the process
 * (`ping` missing or not permitted to open its socket).
 */
export function icmpEcho(ip: string, signal: AbortSignal, options: IcmpOptions = {}): Promise<boolean | null> {
  const family = isIP(ip);
  if (family === 0 || ip.includes('%')) return Promise.reject(new TypeError('icmpEcho needs an IPv4 or IPv6 address'));
  if (signal.aborted) return Promise.resolve(false);

  const waitSeconds = Math.max(1, Math.ceil((options.timeoutMs ?? 2000) / 1000));
  const args = ['-n', '-c', '1', '-W', String(waitSeconds), family === 6 ? '-6' : '-4', ip];
  return new Promise((resolve) => {
    const child = execFile(
      options.command ?? 'ping',
      args,
      {
        signal,
        // Belt and braces: a ping that ignores -W is killed a second after the wait.
        timeout: waitSeconds * 1000 + 1000,
        killSignal: 'SIGKILL',
        windowsHide: true,
        maxBuffer: 64 * 1024,
      },
      (error, _stdout, stderr) => {
        const result = error === null ? true : classifyFailure(error, String(stderr), signal);
        // On abort execFile calls back as soon as it sends the kill: settle once the process
        // has really exited, so no ping outlives the query.
        if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) resolve(result);
        else child.once('exit', () => resolve(result));
      },
    );
  });
}

function classifyFailure(
  error: Error & { code?: string | number | null; killed?: boolean },
  stderr: string,
  signal: AbortSignal,
): boolean | null {
  if (signal.aborted || error.name === 'AbortError') return false;
  // spawn failed: no `ping` on PATH, or not executable.
  if (error.code === 'ENOENT' || error.code === 'EACCES') return null;
  if (error.killed === true) return false;
  if (error.code === 1) return false;
  // Exit 2: an error. Unprivileged ping without CAP_NET_RAW or a ping_group_range says
  // "socket: Operation not permitted"; an unreachable network is a "no" for this target.
  if (/not permitted|permission denied|socket:/i.test(stderr)) return null;
  if (/unreachable/i.test(stderr)) return false;
  return null;
}
