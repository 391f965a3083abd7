/**
 * TCP and UDP transports for the protocol clients.
 *
 * One transport object wraps one socket for one probe. It connects to an IP literal only (it
 * never resolves a name), runs under the probe's abort signal (the deadline of the whole
 * query: an AbortSignal or the service's Deadline), counts every byte received against a
 * total cap (1 MiB by default) and destroys its socket on every exit path: success
 * (`close()`), error, cap exceeded, remote close, timeout and abort. Its abort listener is
 * removed on each of those paths too.
 *
 * Failures are always `ProbeError`s with a typed code:
 * abort → `timeout`; ECONNREFUSED → `connection_refused`; EHOSTUNREACH/ENETUNREACH →
 * `unreachable`; early close → `connection_closed`; over the cap → `response_too_large`.
 */
import dgram from 'node:dgram';
import type { LookupAddress } from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { ProbeError, type ProbeFailure } from '../core/errors.js';
import { MAX_RESPONSE_BYTES, type StreamDecoder } from './codec.js';
import type { AbortLike } from '../core/deadline.js';

export interface Endpoint {
  /** An already-checked IP literal, v4 or v6. */
  ip: string;
  port: number;
  /** Deadline of the whole query; aborting it ends the transport with `timeout`. */
  signal: AbortLike;
  /** Total bytes this connection may receive; default 1 MiB. */
  maxBytes?: number;
}

/** A connected byte stream (TCP). */
export interface StreamConnection {
  /** Queues bytes for the server. A write failure surfaces through the next `read`. */
  write(bytes: Uint8Array): void;
  /**
   * Resolves with the first message `decode` finds in the bytes received (the bytes it
   * consumed are dropped; the rest stay for the next read). Rejects with `ProbeError` and
   * destroys the socket if the decoder throws, the server closes first, the byte cap is
   * exceeded, the signal aborts, or `waitMs` (optional, per read) passes (`timeout`).
   */
  read<T>(decode: StreamDecoder<T>, options?: { waitMs?: number }): Promise<T>;
  /** Destroys the socket. Idempotent. */
  close(): void;
}

/** A connected datagram socket (UDP) that only accepts datagrams from its target. */
export interface DatagramConnection {
  send(bytes: Uint8Array): void;
  /** Next datagram from the target, or undefined when `waitMs` passes first. */
  receive(waitMs: number): Promise<Buffer | undefined>;
  close(): void;
}

export type TcpConnector = (endpoint: Endpoint) => Promise<StreamConnection>;
export type UdpConnector = (endpoint: Endpoint) => Promise<DatagramConnection>;

const UNREACHABLE_CODES = new Set([
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'EAFNOSUPPORT',
]);
const CLOSED_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

/** Maps a socket error to the probe failure a user would recognise. */
export function probeErrorFromSocketError(error: unknown, connected: boolean): ProbeError {
  if (error instanceof ProbeError) return error;
  const code = (error as NodeJS.ErrnoException | undefined)?.code ?? '';
  let failure: ProbeFailure;
  if (code === 'ECONNREFUSED') failure = 'connection_refused';
  else if (UNREACHABLE_CODES.has(code)) failure = 'unreachable';
  else if (code === 'ETIMEDOUT') failure = 'timeout';
  else if (CLOSED_CODES.has(code)) failure = 'connection_closed';
  else failure = connected ? 'connection_closed' : 'unreachable';
  return new ProbeError(failure, { cause: error });
}

/** Marks a transport the client closed itself: no error object is built unless someone reads after it. */
const CLOSED_BY_CLIENT = Symbol('closed by client');
type Failure = ProbeError | typeof CLOSED_BY_CLIENT;

function failureError(failure: Failure): ProbeError {
  return failure === CLOSED_BY_CLIENT
    ? new ProbeError('connection_closed', { cause: new Error('closed by client') })
    : failure;
}

function timeoutError(reason: string): ProbeError {
  return new ProbeError('timeout', { cause: new Error(reason) });
}

/** Checks what the caller promised: an IP literal and a port, so nothing is ever resolved. */
function checkEndpoint(endpoint: Endpoint): 4 | 6 {
  const family = net.isIP(endpoint.ip);
  if (family === 0) {
    throw new ProbeError('unreachable', { cause: new TypeError('target is not an IP literal') });
  }
  if (!Number.isInteger(endpoint.port) || endpoint.port < 1 || endpoint.port > 65535) {
    throw new ProbeError('unreachable', { cause: new RangeError('port out of range') });
  }
  return family as 4 | 6;
}

type LookupCallback = (error: Error | null, address: string | LookupAddress[], family?: number) => void;

/**
 * The lookup handed to sockets: it passes IP literals through and refuses everything else,
 * so that a host name can never be resolved here by accident (resolution and the
 * public-address check happen before a probe starts).
 */
function literalOnlyLookup(hostname: string, options: unknown, callback: LookupCallback): void {
  const family = net.isIP(hostname);
  if (family === 0) {
    callback(new ProbeError('unreachable', { cause: new Error('name resolution is not allowed here') }), '');
    return;
  }
  if (typeof options === 'object' && options !== null && (options as { all?: boolean }).all) {
    callback(null, [{ address: hostname, family }]);
    return;
  }
  callback(null, hostname, family);
}

interface PendingRead {
  decode: StreamDecoder<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: ProbeError) => void;
  timer: NodeJS.Timeout | undefined;
  /** Do not call the decoder again before this many bytes are buffered. */
  need: number;
}

/** A socket's connect step: one waiter, resolved once it connects; the failure that comes first rejects it. */
class ConnectGate {
  connected = false;
  private waiter: { resolve: () => void; reject: (error: ProbeError) => void } | undefined;

  wait(failure: Failure | undefined): Promise<void> {
    if (failure) return Promise.reject(failureError(failure));
    if (this.connected) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  open(): void {
    this.connected = true;
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.resolve();
  }

  /** Hands over the waiter's reject, if one waits, for the caller to settle with its failure. */
  take(): ((error: ProbeError) => void) | undefined {
    const waiter = this.waiter;
    this.waiter = undefined;
    return waiter?.reject;
  }
}

/** Rejects whoever waits on a failed connection (its connect step, a read) with the failure. */
function rejectWaiters(
  failure: Failure,
  connect: ((error: ProbeError) => void) | undefined,
  read: { timer: NodeJS.Timeout | undefined; reject: (error: ProbeError) => void } | undefined,
): void {
  if (!connect && !read) return;
  const error = failureError(failure);
  connect?.(error);
  if (read) {
    if (read.timer) clearTimeout(read.timer);
    read.reject(error);
  }
}

class TcpConnection implements StreamConnection {
  private readonly socket: net.Socket;
  private readonly maxBytes: number;
  private readonly signal: AbortLike;
  private chunks: Buffer[] = [];
  private buffered = 0;
  private received = 0;
  private remoteEnded = false;
  private failure: Failure | undefined;
  private pending: PendingRead | undefined;
  private readonly gate = new ConnectGate();

  constructor(endpoint: Endpoint, family: 4 | 6) {
    this.maxBytes = endpoint.maxBytes ?? MAX_RESPONSE_BYTES;
    this.signal = endpoint.signal;
    this.socket = net.connect({
      host: endpoint.ip,
      port: endpoint.port,
      family,
      noDelay: true,
      lookup: literalOnlyLookup as unknown as net.LookupFunction,
    });
    this.socket.on('connect', this.onConnect);
    this.socket.on('data', this.onData);
    this.socket.on('end', this.onRemoteEnd);
    this.socket.on('close', this.onRemoteEnd);
    this.socket.on('error', this.onError);
    this.signal.addEventListener('abort', this.onAbort, { once: true });
  }

  waitForConnect(): Promise<void> {
    return this.gate.wait(this.failure);
  }

  write(bytes: Uint8Array): void {
    if (this.failure) return;
    this.socket.write(bytes);
  }

  read<T>(decode: StreamDecoder<T>, options: { waitMs?: number } = {}): Promise<T> {
    if (this.pending) return Promise.reject(new Error('one read at a time'));
    return new Promise<T>((resolve, reject) => {
      const pending: PendingRead = {
        decode: decode as StreamDecoder<unknown>,
        resolve: resolve as (value: unknown) => void,
        reject,
        timer: undefined,
        need: 1,
      };
      this.pending = pending;
      // Bytes already buffered may complete the message, even after the server closed.
      this.tryDecode();
      if (this.pending !== pending) return;
      if (this.failure) return this.settleFailure();
      if (this.remoteEnded) return this.fail(new ProbeError('connection_closed'));
      if (options.waitMs !== undefined) {
        pending.timer = setTimeout(() => this.fail(timeoutError('read wait elapsed')), options.waitMs);
      }
    });
  }

  close(): void {
    this.fail(CLOSED_BY_CLIENT);
  }

  private readonly onConnect = (): void => {
    this.gate.open();
  };

  private readonly onData = (chunk: Buffer): void => {
    if (this.failure) return;
    this.received += chunk.length;
    if (this.received > this.maxBytes) {
      this.fail(new ProbeError('response_too_large', { cause: new Error(`more than ${this.maxBytes} bytes`) }));
      return;
    }
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    this.tryDecode();
  };

  private readonly onRemoteEnd = (): void => {
    if (this.remoteEnded) return;
    this.remoteEnded = true;
    if (this.failure) return;
    // Anything complete was decoded on arrival; a read still waiting can never finish.
    if (this.pending || !this.gate.connected) this.fail(new ProbeError('connection_closed'));
    // Otherwise keep what is buffered: the next read may still find a whole message in it.
    else this.destroySocket();
  };

  private readonly onError = (error: Error): void => {
    this.fail(probeErrorFromSocketError(error, this.gate.connected));
  };

  private readonly onAbort = (): void => {
    this.fail(timeoutError('deadline reached'));
  };

  private tryDecode(): void {
    const pending = this.pending;
    if (!pending || this.failure || this.buffered < pending.need || this.buffered === 0) return;
    const all = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.buffered);
    this.chunks = [all];
    let result;
    try {
      result = pending.decode(all);
    } catch (error) {
      this.fail(
        error instanceof ProbeError ? error : new ProbeError('invalid_response', { cause: error }),
      );
      return;
    }
    if (result === undefined) {
      pending.need = all.length + 1;
      return;
    }
    if (typeof result === 'number') {
      pending.need = Math.max(result, all.length + 1);
      return;
    }
    const rest = all.subarray(result.consumed);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    this.pending = undefined;
    if (pending.timer) clearTimeout(pending.timer);
    pending.resolve(result.value);
  }

  private fail(error: Failure): void {
    if (!this.failure) this.failure = error;
    this.destroy();
    this.settleFailure();
  }

  private settleFailure(): void {
    const pending = this.pending;
    this.pending = undefined;
    rejectWaiters(this.failure as Failure, this.gate.take(), pending);
  }

  private destroy(): void {
    this.chunks = [];
    this.buffered = 0;
    this.destroySocket();
  }

  private destroySocket(): void {
    this.signal.removeEventListener('abort', this.onAbort);
    if (!this.socket.destroyed) this.socket.destroy();
  }
}

/** Opens a TCP connection to `endpoint.ip:endpoint.port`; resolves once connected. */
export const connectTcp: TcpConnector = (endpoint) =>
  openConnection(endpoint, 'deadline reached before connecting', (checked, family) => new TcpConnection(checked, family));

/** Checks the endpoint and the deadline, builds the connection, and resolves once it is connected. */
async function openConnection<C extends { waitForConnect(): Promise<void> }>(
  endpoint: Endpoint,
  lateMessage: string,
  build: (endpoint: Endpoint, family: 4 | 6) => C,
): Promise<C> {
  const family = checkEndpoint(endpoint);
  if (endpoint.signal.aborted) throw timeoutError(lateMessage);
  const connection = build(endpoint, family);
  await connection.waitForConnect();
  return connection;
}

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
