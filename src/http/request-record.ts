/**
 * What every answered request leaves behind, whichever entrance answered it (a request step,
 * request-steps.ts): its count in /stats, its metrics, and a log line when it was slow
 * (or, with LOG_REQUESTS, always). One access line per request only with LOG_REQUESTS
 * (docs/configuration.md); errors and warnings are logged where they happen.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Metrics } from '../metrics/index.js';
import type { Store } from '../store/types.js';
import type { RequestStep } from './request-steps.js';

/** One answered request: its route template (never the URL: no addresses in logs or labels), its path for /stats. */
export type RecordRequest = (
  route: string | null,
  method: string,
  path: string,
  statusCode: number,
  elapsedMs: number,
  log: FastifyBaseLogger,
) => void;

export interface RequestRecordOptions {
  /** The API's path prefix: requests under it count as API requests, but health. */
  prefix: string;
  store?: Store | undefined;
  metrics?: Metrics | undefined;
  /** False: nothing is logged. */
  logging: boolean;
  /** Every request gets an access line (LOG_REQUESTS). */
  logRequests: boolean;
  /** Requests slower than this are logged as warnings. */
  slowRequestMs: number;
}

/** A request's log fields. */
function requestLine(route: string | null, method: string, statusCode: number, elapsedMs: number) {
  return { route, method, statusCode, durationMs: Math.round(elapsedMs * 100) / 100 };
}

/** The recorder; null when there is nothing to record (no store, no metrics, no logging). */
export function requestRecorder(options: RequestRecordOptions): RecordRequest | null {
  const { prefix, store, metrics, logging, logRequests, slowRequestMs } = options;
  if (!store && !metrics && !logging) return null;
  // Health (`/status`, `/status/`) is not an API request in /stats (docs/api.md, "Statistics").
  const health = new Set([`${prefix}/status`, `${prefix}/status/`]);
  const api = `${prefix}/`;
  return (route, method, path, statusCode, elapsedMs, log) => {
    store?.count({ totalRequests: 1, apiRequests: path.startsWith(api) && !health.has(path) ? 1 : 0 });
    metrics?.observeRequest(route, method, statusCode, elapsedMs / 1000);
    if (!logging) return;
    const slow = elapsedMs > slowRequestMs;
    if (slow) log.warn(requestLine(route, method, statusCode, elapsedMs), 'slow request');
    else if (logRequests) log.info(requestLine(route, method, statusCode, elapsedMs), 'request completed');
  };
}

/** The request step that records every answered request. */
export function recordStep(record: RecordRequest): RequestStep {
  return {
    name: 'record',
    after: (request, statusCode, elapsedMs, log) => record(request.route, request.method, request.path, statusCode, elapsedMs, log),
  };
}
