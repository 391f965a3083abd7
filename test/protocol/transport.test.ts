/** The transport on its own: caps, deadlines, refusals, cleanup. Real sockets on loopback. */
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { ProbeError } from '../../src/core/errors.js';
import { MAX_RESPONSE_BYTES } from '../../src/protocol/codec.js';
import { probeErrorFromSocketError } from '../../src/protocol/transport.js';
import { connectTcp } from '../../src/protocol/tcp.js';
import { connectUdp } from '../../src/protocol/udp.js';
import { startHostileTcp, type HostileTcpServer } from './hostile.js';

const servers: HostileTcpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  return error instanceof ProbeError ? error.code : `not a ProbeError: ${String(error)}`;
}

/** A decoder that never finds a message. */
const never = (): undefined => undefined;

describe('connectTcp', () => {
  it('stops at 1 MiB in total and closes, however much the server offers', async () => {
    const offered = 64 * 1024 * 1024;
    let written = 0;
    const server = await startHostileTcp((socket) => {
      const chunk = Buffer.alloc(64 * 1024, 1);
      const pump = (): void => {
        while (written < offered && !socket.destroyed) {
          written += chunk.length;
          if (!socket.write(chunk)) return void socket.once('drain', pump);
        }
      };
      pump();
    });
    servers.push(server);
    const connection = await connectTcp({ ip: '127.0.0.1', port: server.port, signal: AbortSignal.timeout(5000) });
    expect(await codeOf(connection.read(never))).toBe('response_too_large');
    expect(await server.allClosed()).toBe(true);
    expect(written).toBeLessThan(offered);
  });

  it('honours a smaller cap', async () => {
    const server = await startHostileTcp((socket) => socket.write(Buffer.alloc(100)));
    servers.push(server);
    const connection = await connectTcp({ ip: '127.0.0.1', port: server.port, signal: AbortSignal.timeout(2000), maxBytes: 50 });
    expect(await codeOf(connection.read(never))).toBe('response_too_large');
    expect(MAX_RESPONSE_BYTES).toBe(1024 * 1024);
  });

  it('keeps bytes that arrived before the server closed for the next read', async () => {
    const server = await startHostileTcp((socket) => socket.end(Buffer.from('abcdef')));
    servers.push(server);
    const connection = await connectTcp({ ip: '127.0.0.1', port: server.port, signal: AbortSignal.timeout(2000) });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const take3 = (b: Buffer) => (b.length >= 3 ? { value: b.subarray(0, 3).toString(), consumed: 3 } : 3);
    expect(await connection.read(take3)).toBe('abc');
    expect(await connection.read(take3)).toBe('def');
    expect(await codeOf(connection.read(take3))).toBe('connection_closed');
  });

  it('turns an abort into timeout, closes the socket and removes its listener', async () => {
    const server = await startHostileTcp(() => undefined);
    servers.push(server);
    const controller = new AbortController();
    const connection = await connectTcp({ ip: '127.0.0.1', port: server.port, signal: controller.signal });
    const reading = codeOf(connection.read(never));
    controller.abort();
    expect(await reading).toBe('timeout');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(await server.allClosed()).toBe(true);
  });

  it('removes its listener on success too', async () => {
    const server = await startHostileTcp((socket) => socket.write('x'));
    servers.push(server);
    const controller = new AbortController();
    const connection = await connectTcp({ ip: '127.0.0.1', port: server.port, signal: controller.signal });
    await connection.read((b) => ({ value: b.toString(), consumed: b.length }));
    connection.close();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(await server.allClosed()).toBe(true);
  });

  it('times out a single read after waitMs', async () => {
    const server = await startHostileTcp(() => undefined);
    servers.push(server);
    const connection = await connectTcp({ ip: '127.0.0.1', port: server.port, signal: AbortSignal.timeout(5000) });
    expect(await codeOf(connection.read(never, { waitMs: 50 }))).toBe('timeout');
    expect(await server.allClosed()).toBe(true);
  });

  it('refuses names and bad ports without touching the network', async () => {
    const signal = AbortSignal.timeout(1000);
    expect(await codeOf(connectTcp({ ip: 'localhost', port: 25565, signal }))).toBe('unreachable');
    expect(await codeOf(connectTcp({ ip: '127.0.0.1', port: 0, signal }))).toBe('unreachable');
    expect(await codeOf(connectTcp({ ip: '127.0.0.1', port: 70000, signal }))).toBe('unreachable');
    expect(await codeOf(connectUdp({ ip: 'example.com', port: 19132, signal }))).toBe('unreachable');
  });

  it('maps socket errors to probe failures', () => {
    const err = (code: string) => Object.assign(new Error(code), { code });
    expect(probeErrorFromSocketError(err('ECONNREFUSED'), false).code).toBe('connection_refused');
    expect(probeErrorFromSocketError(err('EHOSTUNREACH'), false).code).toBe('unreachable');
    expect(probeErrorFromSocketError(err('ENETUNREACH'), false).code).toBe('unreachable');
    expect(probeErrorFromSocketError(err('ECONNRESET'), true).code).toBe('connection_closed');
    expect(probeErrorFromSocketError(err('ETIMEDOUT'), false).code).toBe('timeout');
    expect(probeErrorFromSocketError(err('EWHATEVER'), true).code).toBe('connection_closed');
  });
});

describe('connectUdp', () => {
  it('returns undefined when nothing arrives in time, then a timeout when the deadline passes', async () => {
    const controller = new AbortController();
    const connection = await connectUdp({ ip: '127.0.0.1', port: 9, signal: controller.signal });
    expect(await connection.receive(20)).toBeUndefined();
    const waiting = codeOf(connection.receive(10_000));
    controller.abort();
    expect(await waiting).toBe('timeout');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});
