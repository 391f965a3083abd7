/** The TCP transport: a byte stream read message by message through a decoder (see transport.ts). */
import net from 'node:net';
import { ProbeError } from '../core/errors.js';
import { MAX_RESPONSE_BYTES, type StreamDecoder } from './codec.js';
import type { AbortLike } from '../core/deadline.js';
import {
  CLOSED_BY_CLIENT,
  ConnectGate,
  literalOnlyLookup,
  openConnection,
  probeErrorFromSocketError,
  rejectWaiters,
  timeoutError,
  type Endpoint,
  type Failure,
  type StreamConnection,
  type TcpConnector,
} from './transport.js';

interface PendingRead {
  decode: StreamDecoder<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: ProbeError) => void;
  timer: NodeJS.Timeout | undefined;
  /** Do not call the decoder again before this many bytes are buffered. */
  need: number;
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
