/**
 * HTTP limits every request meets before any route runs (docs/hostile-clients.md):
 *  - a body only where a route takes one (POST /status/bulk, /watches), as `application/json`
 *    (415 otherwise), at most HTTP_BODY_LIMIT_BYTES (Fastify's `bodyLimit`, checked before
 *    parsing); any other request that announces a body is refused with 413 before it is read;
 *  - head, request and keep-alive timeouts on the server (a client trickling its request head
 *    is cut off);
 *  - at most MAX_CONNECTIONS_PER_CLIENT open connections per client address (an IPv6 client
 *    is its /64), except from the trusted proxies, which carry many clients.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Config } from '../config/index.js';
import { ObserverError } from '../core/errors.js';
import type { RequestStep } from './request-steps.js';

/** How often the server looks for connections past their head or request timeout. */
const TIMEOUT_CHECK_MS = 1_000;

/** Methods whose requests may carry a body, on the routes that declare one. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** Whether the request announces a body (a length above zero, or chunks). */
export function announcesBody(headers: { 'content-length'?: string; 'transfer-encoding'?: string }): boolean {
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** Whether a Content-Type header names JSON (`application/json`, parameters such as charset allowed). */
export function isJsonMediaType(contentType: string | undefined): boolean {
  return contentType !== undefined && contentType.split(';', 1)[0]!.trim().toLowerCase() === 'application/json';
}

/**
 * 413 for a request that sends a body to a route that takes none; 415 for a body sent to one
 * that does in another media type than JSON, or with none, and for a request to it that names
 * another media type, even with an empty body (Fastify would otherwise read `text/plain` as a
 * string and refuse it as a 400).
 */
export const bodyRefusalStep: RequestStep = {
  name: 'body refusal',
  before(request) {
    const takesBody = BODY_METHODS.has(request.method) && request.takesBody;
    const contentType = request.headers['content-type'];
    if (!announcesBody(request.headers)) {
      return takesBody && contentType !== undefined && !isJsonMediaType(contentType) ? unsupportedMediaType() : undefined;
    }
    // The unread body is not drained: the connection closes after this answer.
    const close = { headers: { connection: 'close' } };
    if (takesBody) return isJsonMediaType(contentType) ? undefined : unsupportedMediaType(close);
    return new ObserverError('body_not_allowed', 413, `${request.method} ${request.route ?? 'this path'} takes no request body.`, close);
  },
};

function unsupportedMediaType(options?: { headers: Record<string, string> }): ObserverError {
  return new ObserverError('unsupported_media_type', 415, 'The request body must be sent as application/json.', options);
}

/** The server options the timeouts set (node:http createServer). */
export function serverTimeouts(config: Config) {
  const { headersTimeoutMs, requestTimeoutMs } = config.http;
  return { headersTimeout: headersTimeoutMs, requestTimeout: requestTimeoutMs, connectionsCheckingInterval: TIMEOUT_CHECK_MS };
}

/** The address a connection counts against: the IP, or its /64 for IPv6. */
function connectionKey(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const ip = ipaddr.process(address);
  if (ip.kind() === 'ipv4') return ip.toString();
  return (ip as ipaddr.IPv6).toNormalizedString().split(':').slice(0, 4).join(':');
}

/**
 * Closes a new connection when its address already holds `max` open ones. `trusted` says
 * whether a peer is a proxy whose connections carry many clients (TRUST_PROXY).
 */
export function limitConnectionsPerClient(server: Server, max: number, trusted: (address: string) => boolean): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    if (address === undefined || trusted(address)) return;
    const key = connectionKey(address);
    const count = (open.get(key) ?? 0) + 1;
    if (count > max) {
      socket.destroy();
      return;
    }
    open.set(key, count);
    socket.once('close', () => {
      const left = (open.get(key) ?? 1) - 1;
      if (left <= 0) open.delete(key);
      else open.set(key, left);
    });
  });
}
