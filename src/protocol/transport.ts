/**
 * TCP and UDP transports for the protocol clients: what they share. The TCP stream is in
 * tcp.ts, the UDP datagram socket in udp.ts.
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
import type { LookupAddress } from 'node:dns';
import net from 'node:net';
import { ProbeError, type ProbeFailure } from '../core/errors.js';
import type { StreamDecoder } from './codec.js';
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
export const CLOSED_BY_CLIENT = Symbol('closed by client');
export type Failure = ProbeError | typeof CLOSED_BY_CLIENT;

export function failureError(failure: Failure): ProbeError {
  return failure === CLOSED_BY_CLIENT
    ? new ProbeError('connection_closed', { cause: new Error('closed by client') })
    : failure;
}

export function timeoutError(reason: string): ProbeError {
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
export function literalOnlyLookup(hostname: string, options: unknown, callback: LookupCallback): void {
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


/** A socket's connect step: one waiter, resolved once it connects; the failure that comes first rejects it. */
export class ConnectGate {
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
export function rejectWaiters(
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
/** Checks the endpoint and the deadline, builds the connection, and resolves once it is connected. */
export async function openConnection<C extends { waitForConnect(): Promise<void> }>(
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
