import { ProbeError } from '../core/errors.js';
import type { TcpConnector, UdpConnector } from './transport.js';

/** What a protocol client needs to query one server. */
export interface ProbeTarget {
  /** An already-checked IP literal (v4 or v6). The client connects only to it and never resolves anything. */
  ip: string;
  port: number;
  /**
   * The host name for the Java handshake (virtual hosts route on it): the SRV target when the
   * resolver followed an SRV record, as the vanilla client does, else the name the user asked for.
   */
  hostname: string;
  /** The deadline of the whole query. When it aborts, the probe fails with `timeout`. */
  signal: AbortSignal;
}

/** Seams for tests and benchmarks; production code passes nothing. */
export interface ProbeOptions {
  /** Opens TCP connections (Java, legacy). Default: a real socket via `connectTcp`. */
  connectTcp?: TcpConnector;
  /** Opens UDP sockets (Bedrock). Default: a real socket via `connectUdp`. */
  connectUdp?: UdpConnector;
  /** Monotonic milliseconds. Default: `performance.now`. */
  now?: () => number;
}

/** Latencies are reported in milliseconds with two decimals (loopback round trips are sub-millisecond). */
export function roundLatency(ms: number): number {
  return Math.max(0, Math.round(ms * 100) / 100);
}

/** Turns anything thrown inside a probe into a ProbeError (a bug must not leak another error type). */
export function asProbeError(error: unknown): ProbeError {
  return error instanceof ProbeError ? error : new ProbeError('invalid_response', { cause: error });
}
