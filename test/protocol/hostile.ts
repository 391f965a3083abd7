/**
 * Hostile servers for the failure tests: real sockets on loopback, port 0. Each records its
 * accepted connections so that a test can check the client closed its socket.
 */
import { getEventListeners } from 'node:events';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface HostileTcpServer {
  port: number;
  /** Connections accepted so far. */
  accepted: net.Socket[];
  /** Resolves true once every accepted connection has closed, false if `withinMs` passes first. */
  allClosed(withinMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

/** A TCP server on `host`:0 that hands every connection to `onConnection` after it is tracked. */
export async function startHostileTcp(
  onConnection: (socket: net.Socket) => void,
  host = '127.0.0.1',
): Promise<HostileTcpServer> {
  const accepted: net.Socket[] = [];
  const closed = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    accepted.push(socket);
    socket.on('close', () => closed.add(socket));
    socket.on('error', () => {
      // The client resetting the connection is expected here.
    });
    onConnection(socket);
    // Keep reading (and discarding) so that the client's FIN is seen even by a silent server.
    if (socket.listenerCount('data') === 0) socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, host, () => resolve()));
  return {
    port: (server.address() as net.AddressInfo).port,
    accepted,
    async allClosed(withinMs = 2000) {
      const giveUp = Date.now() + withinMs;
      while (Date.now() < giveUp) {
        if (accepted.length > 0 && accepted.every((s) => closed.has(s))) return true;
        await sleep(10);
      }
      return false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of accepted) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Frames `body` as a Java packet (VarInt length prefix). */
export function frame(body: Buffer): Buffer {
  return Buffer.concat([varInt(body.length), body]);
}

export function varInt(value: number): Buffer {
  const out: number[] = [];
  let v = value >>> 0;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return Buffer.from(out);
}

/** A Status Response packet carrying `json` as is. */
export function statusPacket(json: string): Buffer {
  const text = Buffer.from(json, 'utf8');
  return frame(Buffer.concat([Buffer.from([0x00]), varInt(text.length), text]));
}

/** Calls `onData` with everything received so far, each time more arrives. */
export function onReceived(socket: net.Socket, onData: (received: Buffer) => void): void {
  let received = Buffer.alloc(0);
  socket.on('data', (chunk) => {
    received = Buffer.concat([received, chunk]);
    onData(received);
  });
}

/** Count of open resources of a kind (e.g. 'UDPWrap'), from Node's own bookkeeping. */
export function openResources(kind: string): number {
  return process.getActiveResourcesInfo().filter((name) => name === kind).length;
}

/** Waits (bounded) until the count of `kind` resources is back to `count` or below. */
export async function resourcesBackTo(kind: string, count: number, withinMs = 2000): Promise<boolean> {
  const giveUp = Date.now() + withinMs;
  while (Date.now() < giveUp) {
    if (openResources(kind) <= count) return true;
    await sleep(10);
  }
  return false;
}

/**
 * Runs a UDP probe under a deadline of `deadlineMs` and reports how it ended: its result or
 * error, the abort listeners it left on the signal, and whether its socket was released.
 */
export async function probeUdp<T>(run: (signal: AbortSignal) => Promise<T>, deadlineMs: number) {
  const baseline = openResources('UDPWrap');
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), deadlineMs);
  try {
    const outcome = await run(controller.signal).then(
      (result) => ({ result, error: undefined as unknown }),
      (error: unknown) => ({ result: undefined, error }),
    );
    return {
      ...outcome,
      abortListeners: getEventListeners(controller.signal, 'abort').length,
      socketReleased: await resourcesBackTo('UDPWrap', baseline),
    };
  } finally {
    clearTimeout(timer);
  }
}
