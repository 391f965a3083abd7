/**
 * IcmpPinger: real echoes to loopback (127.0.0.1, ::1, many 127.0.0.x) over the shared raw
 * sockets (the tests run as root, which has CAP_NET_RAW). The hostile cases inject a
 * stand-in socket: one whose opening is refused (EPERM, as for an unprivileged user), and one
 * that swallows every echo (a host that never replies). No traffic leaves loopback.
 */
import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { IcmpPinger, openRawSocket, type IcmpFamily, type IcmpSocket } from '../../src/resolve/index.js';

const pingers: IcmpPinger[] = [];
function pinger(...args: ConstructorParameters<typeof IcmpPinger>): IcmpPinger {
  const p = new IcmpPinger(...args);
  pingers.push(p);
  return p;
}
afterEach(() => {
  for (const p of pingers.splice(0)) p.close();
});

/** A raw socket that sends nothing anywhere and never hears back: a host that drops ICMP. */
class SilentSocket extends EventEmitter implements IcmpSocket {
  sent: string[] = [];
  closed = false;
  send(_buffer: Buffer, _offset: number, _length: number, address: string, callback: (error: Error | null, bytes: number) => void) {
    this.sent.push(address);
    setImmediate(() => callback(null, 16));
    return this;
  }
  close() {
    this.closed = true;
    return this;
  }
}

describe('IcmpPinger over raw sockets', () => {
  it('opens one raw socket per family and gets replies from 127.0.0.1 and ::1', async () => {
    const opened: IcmpFamily[] = [];
    const p = pinger({
      openSocket: (family) => {
        opened.push(family);
        return openRawSocket(family);
      },
    });
    expect(p.start()).toEqual({ mode: 'raw', detail: 'IPv4 raw socket, IPv6 raw socket' });
    expect(await p.echo('127.0.0.1', AbortSignal.timeout(5000))).toBe(true);
    expect(await p.echo('::1', AbortSignal.timeout(5000))).toBe(true);
    expect(await p.echo('0:0:0:0:0:0:0:1', AbortSignal.timeout(5000))).toBe(true);
    // Many echoes later: still the same two sockets.
    expect(opened).toEqual([4, 6]);
  });

  it('answers many IPs at once over the shared socket, each matched to its own reply', async () => {
    const p = pinger({ timeoutMs: 5000, cacheMs: 0 });
    const ips = Array.from({ length: 100 }, (_, i) => `127.0.${Math.floor(i / 50)}.${(i % 50) + 1}`);
    const answers = await Promise.all(ips.map((ip) => p.echo(ip, AbortSignal.timeout(10_000))));
    expect(answers).toEqual(ips.map(() => true));
  });

  it('shares an echo in flight for one IP, and keeps the answer briefly', async () => {
    const sockets: SilentSocket[] = [];
    const p = pinger({
      timeoutMs: 200,
      cacheMs: 60_000,
      openSocket: () => {
        const s = new SilentSocket();
        sockets.push(s);
        return s;
      },
    });
    const answers = await Promise.all(Array.from({ length: 20 }, () => p.echo('127.0.0.9')));
    expect(answers).toEqual(Array.from({ length: 20 }, () => false)); // never answered: false
    expect(await p.echo('127.0.0.9')).toBe(false); // kept: no new echo
    expect(sockets.flatMap((s) => s.sent)).toEqual(['127.0.0.9']);
  });

  it('keeps at most cacheEntries answers, forgetting the least recently asked-for IP first', async () => {
    const sent: string[] = [];
    const p = pinger({
      timeoutMs: 50,
      cacheMs: 60_000,
      cacheEntries: 2,
      openSocket: () => {
        const s = new SilentSocket();
        s.sent = sent;
        return s;
      },
    });
    await p.echo('127.0.0.11');
    await p.echo('127.0.0.12');
    await p.echo('127.0.0.11'); // kept, and now the most recently asked for
    await p.echo('127.0.0.13'); // a third IP: 127.0.0.12 goes
    await p.echo('127.0.0.11'); // still kept
    await p.echo('127.0.0.12'); // forgotten: a new echo
    expect(sent).toEqual(['127.0.0.11', '127.0.0.12', '127.0.0.13', '127.0.0.12']);
  });

  it('answers false for a host that never replies, at its deadline, and ends a caller’s wait on abort', async () => {
    const p = pinger({ timeoutMs: 60_000, openSocket: () => new SilentSocket() });
    const controller = new AbortController();
    const pending = p.echo('127.0.0.10', controller.signal);
    controller.abort();
    expect(await pending).toBe(false);
    expect(await p.echo('127.0.0.11', AbortSignal.abort())).toBe(false);

    const short = pinger({ timeoutMs: 50, openSocket: () => new SilentSocket() });
    expect(await short.echo('::1')).toBe(false);
  });

  it('falls back to null for every echo where raw sockets are refused, and says so once', async () => {
    let attempts = 0;
    const p = pinger({
      openSocket: () => {
        attempts += 1;
        throw Object.assign(new Error('Operation not permitted'), { code: 'EPERM' });
      },
    });
    expect(p.start()).toEqual({
      mode: 'unavailable',
      detail: 'IPv4 unavailable (Operation not permitted), IPv6 unavailable (Operation not permitted)',
    });
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => p.echo(`127.0.1.${i + 1}`)));
    expect(answers).toEqual(Array.from({ length: 50 }, () => null));
    expect(await p.echo('::1')).toBeNull();
    expect(attempts).toBe(2); // refused once per family, not once per echo
  });

  it('refuses anything but an IP address', async () => {
    const p = pinger({ openSocket: () => new SilentSocket() });
    await expect(p.echo('-c 1')).rejects.toThrow(TypeError);
    await expect(p.echo('fe80::1%eth0')).rejects.toThrow(TypeError);
  });
});
