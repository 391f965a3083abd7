/**
 * icmpEcho with the system `ping`, to loopback only. The failure paths run small stand-in
 * programs (real processes, written to a temporary directory) in place of `ping`.
 */
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { icmpEcho } from '../../src/resolve/index.js';

let dir: string;

async function program(name: string, script: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, `#!/bin/sh\n${script}\n`);
  await chmod(path, 0o755);
  return path;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'observer-icmp-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('icmpEcho', () => {
  it('gets a reply from 127.0.0.1 (or null where ping is not permitted)', async () => {
    const result = await icmpEcho('127.0.0.1', AbortSignal.timeout(10_000));
    expect([true, null]).toContain(result);
  });

  it('gets a reply from ::1 (or null where ping or IPv6 is not available)', async () => {
    const result = await icmpEcho('::1', AbortSignal.timeout(10_000));
    expect([true, null]).toContain(result);
  });

  it('kills ping when the signal aborts, and answers false', async () => {
    const pidFile = join(dir, 'hang.pid');
    // Stands in for a ping that gets no reply: it never exits on its own.
    const hang = await program('hang', `echo $$ > '${pidFile}'\nexec sleep 120`);
    const controller = new AbortController();
    const pending = icmpEcho('127.0.0.1', controller.signal, { command: hang, timeoutMs: 60_000 });
    let pid = '';
    while (pid === '') {
      await new Promise((done) => setTimeout(done, 20));
      pid = (await readFile(pidFile, 'utf8').catch(() => '')).trim();
    }
    controller.abort();
    expect(await pending).toBe(false);
    expect(() => process.kill(Number(pid), 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));
  });

  it('answers false at once for an already aborted signal', async () => {
    expect(await icmpEcho('127.0.0.1', AbortSignal.abort())).toBe(false);
  });

  it('passes the address as one argument after the options', async () => {
    const argsFile = join(dir, 'args');
    const record = await program('record', `printf '%s\\n' "$@" > '${argsFile}'`);
    expect(await icmpEcho('::1', AbortSignal.timeout(10_000), { command: record, timeoutMs: 1500 })).toBe(true);
    expect((await readFile(argsFile, 'utf8')).trim().split('\n')).toEqual(['-n', '-c', '1', '-W', '2', '-6', '::1']);
  });

  it('is null when ping is missing', async () => {
    const result = await icmpEcho('127.0.0.1', AbortSignal.timeout(10_000), { command: join(dir, 'no-such-ping') });
    expect(result).toBeNull();
  });

  it('is null when ping may not open its socket', async () => {
    const denied = await program('denied', `echo 'ping: socket: Operation not permitted' >&2\nexit 2`);
    expect(await icmpEcho('127.0.0.1', AbortSignal.timeout(10_000), { command: denied })).toBeNull();
  });

  it('is false when no reply came (exit status 1)', async () => {
    const silent = await program('silent', 'exit 1');
    expect(await icmpEcho('127.0.0.1', AbortSignal.timeout(10_000), { command: silent })).toBe(false);
  });

  it.each(['-c', 'localhost', '127.1', 'fe80::1%eth0', ''])('refuses %j, which is not a strict IP', async (ip) => {
    await expect(icmpEcho(ip, AbortSignal.timeout(10_000))).rejects.toThrow(TypeError);
  });
});
