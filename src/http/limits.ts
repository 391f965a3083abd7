/**
 * HTTP limits every request meets before any route runs (docs/hostile-clients.md):
 *  - a body only where a route takes one (POST /status/bulk, /watches, /vote), as `application/json`
 *    (415 otherwise), at most HTTP_BODY_LIMIT_BYTES (Fastify's `bodyLimit`, checked before
 *    parsing); any other request to a route that announces a body is refused with 413 before
 *    it is read. A body refused unread is read and dropped, within bounds, before the refusal
 *    is sent (discardBody), then the connection closes;
 *  - head, request and keep-alive timeouts on the server (a client trickling its request head
 *    is cut off);
 *  - at most MAX_CONNECTIONS_PER_CLIENT open connections per client address (an IPv6 client
 *    is its /64), except from the trusted proxies, which carry many clients.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Config } from '../config/index.js';
import { ObserverError } from '../core/errors.js';
import type { RequestStep } from './request-steps.js';

/** How often the server looks for connections past their head or request timeout. */
const TIMEOUT_CHECK_MS = 1_000;

/** Methods whose requests may carry a body, on the routes that declare one. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** How long a body refused unread is read and dropped at most before its refusal is sent. */
const DISCARD_MS = 1_000;
/** How much of it at most: twice the body limit, and never less than this. */
const DISCARD_MIN_BYTES = 1024 * 1024;

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
 * string and refuse it as a 400); 400 `invalid_body` for a request to it without a body, with
 * or without a JSON media type (the code Fastify gives an empty JSON body). A request no route
 * serves is left to the 404 or 405 (errors.ts), whatever its body.
 */
export const bodyRefusalStep: RequestStep = {
  name: 'body refusal',
  before(request) {
    if (request.route === null) return undefined;
    const takesBody = BODY_METHODS.has(request.method) && request.takesBody;
    const contentType = request.headers['content-type'];
    if (!announcesBody(request.headers)) {
      if (!takesBody) return undefined;
      return contentType === undefined || isJsonMediaType(contentType) ? emptyBody() : unsupportedMediaType();
    }
    if (takesBody) return isJsonMediaType(contentType) ? undefined : unsupportedMediaType();
    return new ObserverError('body_not_allowed', 413, `${request.method} ${request.route} takes no request body.`);
  },
};

function unsupportedMediaType(): ObserverError {
  return new ObserverError('unsupported_media_type', 415, 'The request body must be sent as application/json.');
}

function emptyBody(): ObserverError {
  return new ObserverError('invalid_body', 400, 'The request body is empty; send a JSON object.');
}

/** Whether the request's body is announced and has not all arrived: an answer now would leave it unread. */
export function bodyStillArriving(req: IncomingMessage): boolean {
  return !req.complete && announcesBody(req.headers);
}

/**
 * Reads and drops what is left of `req`'s body, so that a client still writing it reads the
 * answer that follows rather than a connection reset under it (which Node's client reports as
 * EPIPE). Resolves once the body has all come, or at the bounds: DISCARD_MS, and twice
 * `bodyLimit` bytes (DISCARD_MIN_BYTES at least). The connection is to close after the answer.
 */
export function discardBody(req: IncomingMessage, bodyLimit: number): Promise<void> {
  const maxBytes = Math.max(2 * bodyLimit, DISCARD_MIN_BYTES);
  return new Promise((resolve) => {
    let bytes = 0;
    const done = () => {
      clearTimeout(timer);
      req.off('data', count).off('end', done).off('close', done);
      resolve();
    };
    const count = (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > maxBytes) done();
    };
    const timer = setTimeout(done, DISCARD_MS);
    req.on('data', count).once('end', done).once('close', done);
    req.resume();
  });
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
