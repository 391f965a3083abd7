import { ProbeError } from '../core/errors.js';
import type { PingResult } from '../core/types.js';
import type { TcpConnector, UdpConnector } from './transport.js';
import type { AbortLike } from '../core/deadline.js';

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
  signal: AbortLike;
}

/** What the Java and legacy handshakes announce. */
export type HandshakeTarget = Pick<ProbeTarget, 'hostname' | 'port'>;

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

/**
 * Opens the connection to `target`, runs `query` on it and closes it however that ends; any
 * failure becomes a ProbeError. The one shape of pingJava, pingLegacy and pingBedrock.
 */
export async function probe<C extends { close(): void }>(
  connect: (options: { ip: string; port: number; signal: AbortLike }) => Promise<C>,
  target: ProbeTarget,
  query: (connection: C) => Promise<PingResult>,
): Promise<PingResult> {
  let connection: C | undefined;
  try {
    connection = await connect({ ip: target.ip, port: target.port, signal: target.signal });
    return await query(connection);
  } catch (error) {
    throw asProbeError(error);
  } finally {
    connection?.close();
  }
}

/** Turns anything thrown inside a probe into a ProbeError (a bug must not leak another error type). */
export function asProbeError(error: unknown): ProbeError {
  return error instanceof ProbeError ? error : new ProbeError('invalid_response', { cause: error });
}
