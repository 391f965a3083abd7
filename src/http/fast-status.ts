/**
 * Plain status requests and health, answered without Fastify's per-request machinery.
 *
 * A cached status answer spends most of its CPU in Fastify's routing, hook runners and reply
 * building, not in anything Observer decides. So a request that is exactly
 * `GET /api/v1/status/<address>` (no query string, an address of the plain characters of host
 * names, IPv4 literals and ports, no percent-encoding) is answered here, doing what the route
 * and its hooks do:
 *  - the status tier's rate limit, with the same store, key and `RateLimit` headers (none on a
 *    public answer, as rate-limit.ts decides);
 *  - the look-up through the same StatusLookup (cached or pinged, counted, recorded, `X-Cache`,
 *    stale, blocked), and its errors (400, 404, 503) in the one error shape;
 *  - CORS, `Cache-Control`;
 *  - request accounting (/stats) and metrics, through `onAnswered`.
 * Health (`GET /api/v1/status` exactly, which uptime monitors poll) is answered here too, with
 * the route's own body (routes/health.ts `healthBody`). Everything else goes to Fastify: other
 * methods, query strings, bracketed IPv6, percent-encoded or over-long addresses, which the
 * route decodes and validates. A request over its limit, or one whose limit needs a round trip
 * to Redis, goes to Fastify too, carrying the count already made (`handOverCharge`), so the 429
 * and its headers come from one place and nothing is counted twice.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';
import type { ClientHasher } from '../core/client-hash.js';
import { ObserverError } from '../core/errors.js';
import { statusBody, statusBodyBytes } from '../status/cache.js';
import type { StatusLookup } from '../status/types.js';
import { rememberClientKey } from './client-key.js';
import { CORS_HEADERS } from './cors.js';
import { errorBody } from './errors.js';
import { announcesBody } from './limits.js';
import { cacheControl } from './routes/status.js';
import { WINDOW_MS, handOverCharge, rateLimitHeaders, type RateLimitStore, type WindowCount } from './rate-limit.js';

/** Whose `X-Forwarded-For` is believed: what Fastify's `trustProxy` option is given. */
export type TrustProxy = false | ((address: string, hop: number) => boolean) | string[];

export interface FastStatusOptions {
  status: StatusLookup;
  hasher: ClientHasher;
  trustProxy: TrustProxy;
  rateLimit: { store: RateLimitStore; limit: number };
  /** The path prefix of the API (`/api/v1`). */
  prefix: string;
  /** After every status answer: what the onResponse hooks do (accounting, metrics). */
  onAnswered: (statusCode: number, seconds: number) => void;
  /** The health body (routes/health.ts), and what the hooks do after a health answer. */
  health: () => string;
  onHealth: (seconds: number) => void;
  /** Errors the route's handler logs: its 5xx, expected (an ObserverError) or not. */
  onError: (error: unknown) => void;
  /** Before a ping: refuses it while the service is overloaded (http/admission.ts). */
  admitPing: () => void;
}

/**
 * An address the fast path takes as it stands: what the route would receive undecoded, and
 * within its schema's 255 characters. Anything else (`%`, `[`, `/`, …) is left to Fastify.
 */
const PLAIN_ADDRESS = /^[A-Za-z0-9._:-]{1,255}$/;

const JSON_TYPE = 'application/json; charset=utf-8';

export class FastStatus {
  private readonly trust: ((address: string, hop: number) => boolean) | null;
  /** The headers every status answer starts with: CORS and the status tier's policy. */
  private readonly fixed: readonly string[];
  private readonly cors: readonly string[] = Object.entries(CORS_HEADERS).flat();
  private readonly healthUrl: string;
  private readonly statusPrefix: string;

  constructor(private readonly options: FastStatusOptions) {
    const { trustProxy } = options;
    this.trust = trustProxy === false ? null : typeof trustProxy === 'function' ? trustProxy : proxyAddr.compile(trustProxy);
    const policy = rateLimitHeaders('status', options.rateLimit.limit, { count: 0, resetMs: 0 })['RateLimit-Policy'];
    this.fixed = [...this.cors, 'ratelimit-policy', policy];
    this.healthUrl = `${options.prefix}/status`;
    this.statusPrefix = `${options.prefix}/status/`;
  }

  /** Answers the request and returns true, or returns false for Fastify to answer it. */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    const { url } = req;
    if (req.method !== 'GET' || url === undefined || announcesBody(req.headers)) return false;
    if (url === this.healthUrl) return this.answerHealth(res);
    if (!url.startsWith(this.statusPrefix)) return false;
    const address = url.slice(this.statusPrefix.length);
    if (!PLAIN_ADDRESS.test(address)) return false;
    const started = performance.now();
    const { store, limit } = this.options.rateLimit;
    const ip = this.clientIp(req);
    const key = this.options.hasher.hash(ip);
    rememberClientKey(req, key);
    let counted: WindowCount | Promise<WindowCount>;
    try {
      counted = store.hit(`status:${key}`, WINDOW_MS, limit);
    } catch {
      return false;
    }
    if (counted instanceof Promise || counted.count > limit) {
      handOverCharge(req, counted);
      return false;
    }
    this.answer(address, this.options.hasher.lookupKey(ip), counted, res, started).catch((error: unknown) => this.failed(error, res));
    return true;
  }

  /** GET /api/v1/status exactly: health, never rate-limited, never cached. */
  private answerHealth(res: ServerResponse): true {
    const started = performance.now();
    const body = this.options.health();
    res.writeHead(200, [...this.cors, 'cache-control', 'no-store', 'content-type', JSON_TYPE, 'content-length', String(Buffer.byteLength(body))]);
    res.end(body);
    this.options.onHealth((performance.now() - started) / 1000);
    return true;
  }

  /**
   * The answer itself failed (a header Node refuses, the accounting): reported, and the client
   * gets a 500 if nothing was sent yet, or a closed connection if the answer was cut short.
   */
  private failed(error: unknown, res: ServerResponse): void {
    this.options.onError(error);
    if (res.writableEnded) return;
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const body = JSON.stringify(errorBody('internal_error', 'An unexpected error occurred.'));
    res.writeHead(500, [...this.cors, 'content-type', JSON_TYPE, 'content-length', String(Buffer.byteLength(body))]);
    res.end(body);
  }

  /** The client's address as Fastify's `request.ip` would give it (TRUST_PROXY applied). */
  private clientIp(req: IncomingMessage): string {
    if (this.trust === null) return req.socket.remoteAddress ?? '';
    const addresses = proxyAddr.all(req, this.trust);
    return addresses[addresses.length - 1] ?? '';
  }

  private async answer(address: string, clientKey: string, counted: WindowCount, res: ServerResponse, started: number): Promise<void> {
    const rateLimit = rateLimitHeaders('status', this.options.rateLimit.limit, counted).RateLimit;
    let statusCode = 200;
    let body: string;
    let bytes: number;
    // Header pairs as a flat array, not an object: writeHead copies a spread object's headers
    // one by one, which costs more than the rest of a cached answer; an array it takes as is.
    // A status answer is public (shared caches store it): it carries no client's RateLimit.
    const headers = [...this.fixed];
    try {
      const answer = await this.options.status.lookup(address, 'java', { clientKey, beforePing: this.options.admitPing });
      body = statusBody(answer.status);
      bytes = statusBodyBytes(answer.status);
      headers.push('x-cache', answer.cache, 'cache-control', cacheControl(answer.maxAgeSeconds));
    } catch (error) {
      headers.push('ratelimit', rateLimit);
      if (error instanceof ObserverError) {
        // Logged as the route's error handler does: a 503 (saturated) is worth knowing of.
        if (error.statusCode >= 500) this.options.onError(error);
        statusCode = error.statusCode;
        for (const [name, value] of Object.entries(error.headers)) headers.push(name.toLowerCase(), value);
        body = JSON.stringify(errorBody(error.code, error.message));
      } else {
        this.options.onError(error);
        statusCode = 500;
        body = JSON.stringify(errorBody('internal_error', 'An unexpected error occurred.'));
      }
      bytes = Buffer.byteLength(body);
    }
    headers.push('content-type', JSON_TYPE, 'content-length', String(bytes));
    res.writeHead(statusCode, headers);
    res.end(body);
    this.options.onAnswered(statusCode, (performance.now() - started) / 1000);
  }
}
