/** The UDP transport: a connected datagram socket that only accepts its target's datagrams (see transport.ts). */
import dgram from 'node:dgram';
import ipaddr from 'ipaddr.js';
import { ProbeError } from '../core/errors.js';
import { MAX_RESPONSE_BYTES } from './codec.js';
import type { AbortLike } from '../core/deadline.js';
import {
  CLOSED_BY_CLIENT,
  ConnectGate,
  failureError,
  literalOnlyLookup,
  openConnection,
  probeErrorFromSocketError,
  rejectWaiters,
  timeoutError,
  type DatagramConnection,
  type Endpoint,
  type Failure,
  type UdpConnector,
} from './transport.js';

/** Datagrams queued before `receive` is called; more are dropped (they still count toward the cap). */
const MAX_QUEUED_DATAGRAMS = 32;

function sameAddress(a: string, b: string): boolean {
  try {
    const pa = ipaddr.process(a);
    const pb = ipaddr.process(b);
    return pa.kind() === pb.kind() && pa.toNormalizedString() === pb.toNormalizedString();
  } catch {
    return false;
  }
}

class UdpConnection implements DatagramConnection {
  private readonly socket: dgram.Socket;
  private readonly maxBytes: number;
  private readonly signal: AbortLike;
  private readonly ip: string;
  private readonly port: number;
  private queue: Buffer[] = [];
  private received = 0;
  private failure: Failure | undefined;
  private waiter:
    | { resolve: (value: Buffer | undefined) => void; reject: (error: ProbeError) => void; timer: NodeJS.Timeout }
    | undefined;
  private readonly gate = new ConnectGate();

  constructor(endpoint: Endpoint, family: 4 | 6) {
    this.maxBytes = endpoint.maxBytes ?? MAX_RESPONSE_BYTES;
    this.signal = endpoint.signal;
    this.ip = endpoint.ip;
    this.port = endpoint.port;
    this.socket = dgram.createSocket({
      type: family === 6 ? 'udp6' : 'udp4',
      lookup: literalOnlyLookup as unknown as dgram.SocketOptions['lookup'],
    });
    this.socket.on('message', this.onMessage);
    this.socket.on('error', this.onError);
    this.signal.addEventListener('abort', this.onAbort, { once: true });
    // A connected UDP socket makes the kernel drop datagrams from any other source and
    // reports ICMP port-unreachable as ECONNREFUSED; onMessage checks the source again.
    this.socket.bind(0, () => {
      if (this.failure) return;
      this.socket.connect(this.port, this.ip, (error?: Error) => {
        if (error) return this.fail(probeErrorFromSocketError(error, false));
        this.gate.open();
      });
    });
  }

  waitForConnect(): Promise<void> {
    return this.gate.wait(this.failure);
  }

  send(bytes: Uint8Array): void {
    if (this.failure) return;
    this.socket.send(bytes, (error) => {
      if (error) this.fail(probeErrorFromSocketError(error, true));
    });
  }

  receive(waitMs: number): Promise<Buffer | undefined> {
    if (this.waiter) return Promise.reject(new Error('one receive at a time'));
    const queued = this.queue.shift();
    if (queued) return Promise.resolve(queued);
    if (this.failure) return Promise.reject(failureError(this.failure));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        resolve(undefined);
      }, Math.max(0, waitMs));
      this.waiter = { resolve, reject, timer };
    });
  }

  close(): void {
    this.fail(CLOSED_BY_CLIENT);
  }

  private readonly onMessage = (message: Buffer, remote: dgram.RemoteInfo): void => {
    if (this.failure) return;
    // Only the target may answer (RakNet pongs come from the pinged address and port).
    if (remote.port !== this.port || !sameAddress(remote.address, this.ip)) return;
    this.received += message.length;
    if (this.received > this.maxBytes) {
      this.fail(new ProbeError('response_too_large', { cause: new Error(`more than ${this.maxBytes} bytes`) }));
      return;
    }
    const waiter = this.waiter;
    if (waiter) {
      this.waiter = undefined;
      clearTimeout(waiter.timer);
      waiter.resolve(message);
    } else if (this.queue.length < MAX_QUEUED_DATAGRAMS) {
      this.queue.push(message);
    }
  };

  private readonly onError = (error: Error): void => {
    this.fail(probeErrorFromSocketError(error, this.gate.connected));
  };

  private readonly onAbort = (): void => {
    this.fail(timeoutError('deadline reached'));
  };

  private fail(error: Failure): void {
    const first = !this.failure;
    if (first) this.failure = error;
    this.signal.removeEventListener('abort', this.onAbort);
    this.queue = [];
    if (first) {
      try {
        this.socket.close();
      } catch {
        // Already closed: nothing left to release.
      }
    }
    const waiter = this.waiter;
    this.waiter = undefined;
    rejectWaiters(this.failure as Failure, this.gate.take(), waiter);
  }
}

/** Opens a UDP socket bound to an ephemeral port and connected to `endpoint.ip:endpoint.port`. */
export const connectUdp: UdpConnector = (endpoint) =>
  openConnection(endpoint, 'deadline reached before sending', (checked, family) => new UdpConnection(checked, family));
