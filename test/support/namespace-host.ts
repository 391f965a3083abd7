/**
 * A host of the test's own on a network bridge the test made (a compose network): a network
 * namespace whose one interface is a veth pair's end, the other end a port of the bridge, with
 * an address of the bridge's subnet. Processes run in it through `ip netns exec`, so that what
 * they serve is reached from the bridge's containers at that address and from nowhere else.
 * close() ends those processes and deletes the namespace, and the veth pair with it.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface NamespaceHost {
  name: string;
  address: string;
  /** Runs a command in the namespace; its output is the caller's to read. */
  spawn(command: string, args: string[]): ChildProcess;
  close(): Promise<void>;
}

async function ip(...args: string[]): Promise<void> {
  await run('ip', args, { timeout: 10_000 });
}

/** Ends a child with SIGTERM (SIGKILL after 5 s) and waits for it. */
async function end(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(force);
}

/** `address` with its prefix length, e.g. 172.29.80.100/24, on `bridge`. */
export async function startNamespaceHost(options: { bridge: string; address: string; prefixLength: number }): Promise<NamespaceHost> {
  // Names of this process's own: interface names are at most 15 characters.
  const name = `obs-${process.pid}`;
  const hostEnd = `obs${process.pid}`;
  const children: ChildProcess[] = [];
  await ip('netns', 'add', name);
  try {
    await ip('link', 'add', hostEnd, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', name);
    await ip('link', 'set', hostEnd, 'master', options.bridge);
    await ip('link', 'set', hostEnd, 'up');
    await ip('-n', name, 'addr', 'add', `${options.address}/${options.prefixLength}`, 'dev', 'eth0');
    await ip('-n', name, 'link', 'set', 'eth0', 'up');
    await ip('-n', name, 'link', 'set', 'lo', 'up');
  } catch (error) {
    await ip('netns', 'del', name).catch(() => undefined);
    throw error;
  }
  return {
    name,
    address: options.address,
    spawn(command, args) {
      const child = spawn('ip', ['netns', 'exec', name, command, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(child);
      return child;
    },
    async close() {
      await Promise.all(children.map(end));
      await ip('netns', 'del', name).catch(() => undefined);
    },
  };
}
