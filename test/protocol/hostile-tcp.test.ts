/**
 * Java and legacy clients against hostile TCP servers (real sockets on 127.0.0.1, port 0).
 * Every case must end in a typed ProbeError within the deadline, with the server seeing the
 * client close its socket, and with the deadline's abort listener removed.
 */
import { getEventListeners } from 'node:events';
import http from 'node:http';
import type net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ProbeError, type ProbeFailure } from '../../src/core/errors.js';
import { pingJava, pingLegacy } from '../../src/protocol/index.js';
import type { PingResult } from '../../src/core/types.js';
import { fixture } from './fixtures.js';
import { frame, onReceived, startHostileTcp, statusPacket, varInt, type HostileTcpServer } from './hostile.js';

const servers: HostileTcpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function hostile(onConnection: (socket: net.Socket) => void): Promise<HostileTcpServer> {
  const server = await startHostileTcp(onConnection);
  servers.push(server);
  return server;
}

/** Answers the status request with `reply` (once the handshake and request have arrived). */
function replyToStatus(reply: (socket: net.Socket) => void): (socket: net.Socket) => void {
  return (socket) => {
    let replied = false;
    onReceived(socket, (received) => {
      // Handshake (20 bytes for host "localhost") + status request (2 bytes).
      if (!replied && received.length >= 22) {
        replied = true;
        reply(socket);
      }
    });
  };
}

type Ping = typeof pingJava;

async function probe(ping: Ping, server: HostileTcpServer, deadlineMs = 1000) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), deadlineMs);
  try {
    const outcome = await ping({ ip: '127.0.0.1', port: server.port, hostname: 'localhost', signal: controller.signal }).then(
      (result) => ({ result, error: undefined }),
      (error: unknown) => ({ result: undefined as PingResult | undefined, error }),
    );
    return { ...outcome, abortListeners: getEventListeners(controller.signal, 'abort').length };
  } finally {
    clearTimeout(timer);
  }
}

async function expectFailure(ping: Ping, server: HostileTcpServer, code: ProbeFailure, deadlineMs = 1000) {
  const outcome = await probe(ping, server, deadlineMs);
  expect(outcome.error).toBeInstanceOf(ProbeError);
  expect((outcome.error as ProbeError).code).toBe(code);
  expect(outcome.abortListeners).toBe(0);
  expect(await server.allClosed()).toBe(true);
}

describe('pingJava against hostile servers', () => {
  it('accept and stay silent → timeout', async () => {
    const server = await hostile(() => undefined);
    await expectFailure(pingJava, server, 'timeout', 300);
  });

  it('drip one byte a second → timeout', async () => {
    const server = await hostile((socket) => {
      const bytes = fixture('java-status-response.hex');
      let at = 0;
      const timer = setInterval(() => socket.write(bytes.subarray(at, ++at)), 1000);
      socket.on('close', () => clearInterval(timer));
    });
    await expectFailure(pingJava, server, 'timeout', 1500);
  });

  it('close mid-packet → connection_closed', async () => {
    const server = await hostile(replyToStatus((socket) => socket.end(fixture('java-status-response.hex').subarray(0, 100))));
    await expectFailure(pingJava, server, 'connection_closed');
  });

  it('close before any reply → connection_closed', async () => {
    const server = await hostile((socket) => socket.end());
    await expectFailure(pingJava, server, 'connection_closed');
  });

  it('6-byte VarInt → invalid_response', async () => {
    const server = await hostile(replyToStatus((socket) => socket.write(Buffer.from('ffffffffff01', 'hex'))));
    await expectFailure(pingJava, server, 'invalid_response');
  });

  it('negative length → invalid_response', async () => {
    const server = await hostile(replyToStatus((socket) => socket.write(Buffer.from('ffffffff0f00', 'hex'))));
    await expectFailure(pingJava, server, 'invalid_response');
  });

  it('2 GiB length → response_too_large, without waiting for the body', async () => {
    const server = await hostile(replyToStatus((socket) => socket.write(Buffer.from('ffffffff0700', 'hex'))));
    await expectFailure(pingJava, server, 'response_too_large');
  });

  it('a negative JSON string length inside a good frame → invalid_response', async () => {
    const server = await hostile(replyToStatus((socket) => socket.write(frame(Buffer.from('00ffffffff0f', 'hex')))));
    await expectFailure(pingJava, server, 'invalid_response');
  });

  it('a reply over 1 MiB → response_too_large, and the client stops reading', async () => {
    const offered = 64 * 1024 * 1024;
    let written = 0;
    const server = await hostile(
      replyToStatus((socket) => {
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        socket.write(Buffer.concat([varInt(1536 * 1024), Buffer.from([0x00])]));
        const pump = (): void => {
          while (written < offered && !socket.destroyed) {
            written += chunk.length;
            if (!socket.write(chunk)) return void socket.once('drain', pump);
          }
        };
        pump();
      }),
    );
    await expectFailure(pingJava, server, 'response_too_large');
    expect(written).toBeLessThan(offered);
  });

  it('invalid JSON → invalid_response', async () => {
    const server = await hostile(replyToStatus((socket) => socket.write(statusPacket('{"version": {"name": "1.21",'))));
    await expectFailure(pingJava, server, 'invalid_response');
  });

  it('JSON that is not an object → invalid_response', async () => {
    const server = await hostile(replyToStatus((socket) => socket.write(statusPacket('["a","b"]'))));
    await expectFailure(pingJava, server, 'invalid_response');
  });

  it('a packet other than the status response → invalid_response', async () => {
    const server = await hostile(replyToStatus((socket) => socket.write(frame(Buffer.from('0501020304', 'hex')))));
    await expectFailure(pingJava, server, 'invalid_response');
  });

  it('an HTTP server on the port → invalid_response', async () => {
    const sockets: net.Socket[] = [];
    const closed = new Set<net.Socket>();
    const httpServer = http.createServer((_req, res) => res.end('hello'));
    httpServer.on('connection', (socket) => {
      sockets.push(socket);
      socket.on('close', () => closed.add(socket));
    });
    await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', () => resolve()));
    try {
      const port = (httpServer.address() as net.AddressInfo).port;
      const error = await pingJava({ ip: '127.0.0.1', port, hostname: 'localhost', signal: AbortSignal.timeout(1000) }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ProbeError);
      expect((error as ProbeError).code).toBe('invalid_response');
      await expect.poll(() => sockets.length > 0 && sockets.every((s) => closed.has(s)), { timeout: 2000 }).toBe(true);
    } finally {
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    }
  });

  it('10,000-deep extra nesting → a status with a MOTD capped at depth 32', async () => {
    const depth = 10_000;
    const json = '{"description":' + '{"text":"a","extra":['.repeat(depth) + '"z"' + ']}'.repeat(depth) + '}';
    const server = await hostile(replyToStatus((socket) => socket.end(statusPacket(json))));
    const outcome = await probe(pingJava, server);
    expect(outcome.error).toBeUndefined();
    expect(outcome.result?.motd.clean).toBe('a'.repeat(33));
    expect(outcome.abortListeners).toBe(0);
    expect(await server.allClosed()).toBe(true);
  });

  it('a favicon that is not a PNG data URL is dropped from an otherwise good status', async () => {
    const json = JSON.stringify({
      version: { name: 'Paper 1.21', protocol: 767 },
      players: { online: 1, max: 10 },
      description: 'ok',
      favicon: 'data:image/svg+xml;base64,PHN2Zz48c2NyaXB0PmFsZXJ0KDEpPC9zY3JpcHQ+PC9zdmc+',
    });
    const server = await hostile(replyToStatus((socket) => socket.end(statusPacket(json))));
    const outcome = await probe(pingJava, server);
    expect(outcome.result?.favicon).toBeNull();
    expect(outcome.result?.players).toEqual({ online: 1, max: 10, sample: [] });
  });

  it('a server that never answers the ping still gives its status (latency of the status exchange)', async () => {
    const server = await hostile(replyToStatus((socket) => socket.write(statusPacket('{"description":"no pong"}'))));
    const outcome = await probe(pingJava, server, 3000);
    expect(outcome.error).toBeUndefined();
    expect(outcome.result?.motd.clean).toBe('no pong');
    expect(outcome.result?.latencyMs).toBeGreaterThanOrEqual(0);
    expect(outcome.abortListeners).toBe(0);
    expect(await server.allClosed()).toBe(true);
  });

  it('frames after the status response are ignored, garbage after it too', async () => {
    const server = await hostile((socket) => {
      let stage = 0;
      onReceived(socket, (received) => {
        if (stage === 0 && received.length >= 22) {
          stage = 1;
          // Status, then an unrelated frame and a pong with the wrong payload.
          socket.write(Buffer.concat([statusPacket('{"description":"extra frames"}'), frame(Buffer.from('2a00', 'hex')), frame(Buffer.from('010000000000000000', 'hex'))]));
        } else if (stage === 1 && received.length >= 32) {
          stage = 2;
          socket.end(Buffer.from('ffffffffffff', 'hex')); // a 6-byte VarInt, after the status
        }
      });
    });
    const outcome = await probe(pingJava, server);
    expect(outcome.error).toBeUndefined();
    expect(outcome.result?.motd.clean).toBe('extra frames');
    expect(await server.allClosed()).toBe(true);
  });

  it('an already-aborted signal → timeout without connecting', async () => {
    const server = await hostile(() => undefined);
    const error = await pingJava({ ip: '127.0.0.1', port: server.port, hostname: 'x', signal: AbortSignal.abort() }).catch(
      (e: unknown) => e,
    );
    expect((error as ProbeError).code).toBe('timeout');
    expect(server.accepted).toHaveLength(0);
  });
});

describe('pingLegacy against hostile servers', () => {
  it('accept and stay silent → timeout', async () => {
    const server = await hostile(() => undefined);
    await expectFailure(pingLegacy, server, 'timeout', 300);
  });

  it('close mid-packet → connection_closed', async () => {
    const server = await hostile((socket) => socket.once('data', () => socket.end(fixture('legacy-1.6-reply.hex').subarray(0, 20))));
    await expectFailure(pingLegacy, server, 'connection_closed');
  });

  it('a modern-only answer → invalid_response', async () => {
    const server = await hostile((socket) => socket.once('data', () => socket.write(statusPacket('{}'))));
    await expectFailure(pingLegacy, server, 'invalid_response');
  });

  it('a kick without counts → invalid_response', async () => {
    const text = 'Outdated client!';
    const reply = Buffer.concat([Buffer.from([0xff, 0x00, text.length]), Buffer.from(text, 'utf16le').swap16()]);
    const server = await hostile((socket) => socket.once('data', () => socket.write(reply)));
    await expectFailure(pingLegacy, server, 'invalid_response');
  });

  it('answers a pre-1.4-style server (motd§online§max only)', async () => {
    const text = 'Old §aserver§3§16';
    const reply = Buffer.concat([Buffer.from([0xff, 0x00, text.length]), Buffer.from(text, 'utf16le').swap16()]);
    const server = await hostile((socket) => socket.once('data', () => socket.end(reply)));
    const outcome = await probe(pingLegacy, server);
    expect(outcome.result?.version).toBeNull();
    expect(outcome.result?.motd.raw).toBe('Old §aserver');
    expect(outcome.result?.players).toEqual({ online: 3, max: 16, sample: [] });
  });
});
