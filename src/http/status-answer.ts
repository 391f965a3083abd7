/**
 * The one writer of status answers (`GET /api/v1/status/{address}`), whichever entrance the
 * request came by: the front (fast-status.ts: a plain request, before Fastify) or the Fastify
 * route (routes/status.ts: every other spelling, once its schema has validated it, and the
 * requests that schema refuses). For every answer it:
 *  - charges the status tier to the client (rate-limit.ts's store, key and 429);
 *  - looks the server up (cached or pinged, counted, recorded, stale, blocked);
 *  - writes the status line, the headers (CORS, `RateLimit-Policy`, `X-Cache`, `Cache-Control`;
 *    `RateLimit` only on errors, which shared caches do not store) and the body, or the error
 *    in the one error shape.
 * What the request counts for in /stats and the metrics is recorded by the entrance, with the
 * one recorder every request goes through (request-record.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ClientHasher, ClientKeys } from '../core/client-hash.js';
import { ObserverError } from '../core/errors.js';
import { statusBody } from '../status/cache.js';
import { lookupEditions, parseEditionChoice, type EditionChoice } from '../status/editions.js';
import type { QueryMode, ServerStatus } from '../core/types.js';
import type { CacheState, LookupOptions, QueryRequest, StatusAnswer, StatusLookup } from '../status/types.js';
import { errorBody, logsAsError } from './errors.js';
import { WINDOW_MS, rateLimitError, rateLimitHeaders, type RateLimitStore, type WindowCount } from './rate-limit.js';

/** What a status request asks for, as its path and query string say. */
export interface StatusAsk {
  address: string;
  legacy?: boolean;
  bedrock?: boolean;
  /** `auto` asks both editions at once (status/editions.ts). */
  edition?: EditionChoice;
  /** `query=true`, with its `queryPort` if any. */
  query?: QueryRequest;
}

export interface StatusAnswersOptions {
  status: StatusLookup;
  hasher: ClientHasher;
  /** The client's address as Fastify's `request.ip` gives it (TRUST_PROXY applied). */
  clientAddress: (req: IncomingMessage) => string;
  /** The status tier's store and limit; a store failure lets the request through, and `onError` hears of it. */
  rateLimit: { store: RateLimitStore; limit: number; onError: (error: unknown) => void };
  /** Before a ping: refuses it while the service is overloaded (http/admission.ts). */
  admitPing: () => void;
  /** Errors worth logging: a 5xx, an answer that could not be written. */
  onError: (error: unknown) => void;
  /** Headers every answer carries, as flat pairs: the request steps' (request-steps.ts: CORS). */
  headers: readonly string[];
}

export const JSON_TYPE = 'application/json; charset=utf-8';

/** `Cache-Control` values by max-age, built once each. */
const cacheControls: string[] = [];
export function cacheControl(maxAgeSeconds: number): string {
  return (cacheControls[maxAgeSeconds] ??= `public, max-age=${maxAgeSeconds}`);
}

/** The Query a request's `query` flag and `queryPort` ask for, if any (shared with the bulk route). */
export function queryRequest(query: boolean | undefined, queryPort: number | undefined): QueryRequest | undefined {
  if (!query) return undefined;
  return queryPort === undefined ? {} : { port: queryPort };
}

/** Look-up options of a status request (shared with the bulk route). */
export function statusLookupOptions(clientKey: string, admitPing: () => void, query: QueryRequest | undefined): LookupOptions {
  const options: LookupOptions = { clientKey, beforePing: admitPing };
  if (query) options.query = query;
  return options;
}

/** A client's status-tier key, its look-up key and the look-up options of its requests without a Query. */
interface PlainClient {
  readonly tierKey: string;
  readonly lookupKey: string;
  readonly options: LookupOptions;
}

export class StatusAnswers {
  /** The headers every status answer starts with: the request steps' and the status tier's policy, as flat pairs. */
  private readonly fixed: readonly string[];
  private readonly policy: string;
  /** The headers each status was last answered with, and its body's length in bytes (headersOf). */
  private readonly heads = new WeakMap<ServerStatus, { cache: CacheState; maxAgeSeconds: number; headers: string[]; bytes: number }>();
  /**
   * What a client's plain requests need, made once per client keys (ClientHasher.keysOf keeps
   * one object per connection): its status-tier key and the look-up options of a request without
   * a Query. A cached answer then builds no string and no object of its own for them.
   */
  private readonly clients = new WeakMap<ClientKeys, PlainClient>();
  /** A store failure lets the request through (as every tier does) and is reported. */
  private readonly storeFailed = (error: unknown): null => {
    this.options.rateLimit.onError(error);
    return null;
  };

  constructor(private readonly options: StatusAnswersOptions) {
    this.policy = rateLimitHeaders('status', options.rateLimit.limit, { count: 0, resetMs: 0 })['RateLimit-Policy'];
    this.fixed = [...options.headers, 'ratelimit-policy', this.policy];
  }

  /**
   * Answers `ask`; an ObserverError in its place (the error Fastify's schema gave the request)
   * is answered as that error, charged like any other request. Returns once the answer is
   * written, or a promise of that when the answer waits (for the rate-limit store, a ping);
   * never throws or rejects: an answer that cannot be written is reported and becomes a 500, or
   * a closed connection if it was cut short.
   */
  serve(req: IncomingMessage, res: ServerResponse, ask: StatusAsk | ObserverError): Promise<void> | undefined {
    try {
      const client = this.clientOf(this.options.hasher.keysOf(req.socket, this.options.clientAddress(req)));
      const counted = this.charge(client.tierKey);
      const answered =
        counted instanceof Promise
          ? counted.then((windowCount) => this.answer(ask, client, windowCount, res))
          : this.answer(ask, client, counted, res);
      return answered?.catch((error: unknown) => this.failed(error, res));
    } catch (error) {
      this.failed(error, res);
      return undefined;
    }
  }

  private clientOf(keys: ClientKeys): PlainClient {
    let client = this.clients.get(keys);
    if (client === undefined) {
      client = { tierKey: `status:${keys.key}`, lookupKey: keys.lookupKey, options: statusLookupOptions(keys.lookupKey, this.options.admitPing, undefined) };
      this.clients.set(keys, client);
    }
    return client;
  }

  /** One unit of the status tier; null when the store failed (the request is let through, as every tier does). */
  private charge(tierKey: string): WindowCount | Promise<WindowCount | null> | null {
    const { store, limit } = this.options.rateLimit;
    try {
      const counted = store.hit(tierKey, WINDOW_MS, limit);
      return counted instanceof Promise ? counted.catch(this.storeFailed) : counted;
    } catch (error) {
      return this.storeFailed(error);
    }
  }

  /** Writes the answer, at once when this instance's cache decides it, or once the look-up has it. */
  private answer(ask: StatusAsk | ObserverError, client: PlainClient, counted: WindowCount | null, res: ServerResponse): Promise<void> | undefined {
    const { limit } = this.options.rateLimit;
    try {
      if (counted !== null && counted.count > limit) throw rateLimitError('status', limit, counted);
      if (ask instanceof ObserverError) throw ask;
      const mode = parseEditionChoice(ask.edition, ask.legacy ?? false, ask.bedrock ?? false);
      const options = ask.query ? statusLookupOptions(client.lookupKey, this.options.admitPing, ask.query) : client.options;
      const answered =
        mode === 'auto'
          ? lookupEditions(this.options.status, ask.address, options).then((both) => this.writeStatus(res, both, both.body))
          : this.single(ask.address, mode, options, res);
      return answered?.catch((error: unknown) => this.answerError(error, counted, res));
    } catch (error) {
      this.answerError(error, counted, res);
      return undefined;
    }
  }

  /** One edition's answer: written at once from the cache when it can be, else once looked up. */
  private single(address: string, mode: QueryMode, options: LookupOptions, res: ServerResponse): Promise<void> | undefined {
    const cached = this.options.status.cached?.(address, mode, options);
    if (cached === undefined) return this.options.status.lookup(address, mode, options).then((answer) => this.writeAnswer(res, answer));
    this.writeAnswer(res, cached);
    return undefined;
  }

  /** A 200 (a public answer carries no client's RateLimit). */
  private writeAnswer(res: ServerResponse, answer: StatusAnswer): void {
    const body = statusBody(answer.status);
    res.writeHead(200, this.headersOf(answer, body));
    res.end(body);
  }

  /** A 200 of both editions, put together for this request. */
  private writeStatus(res: ServerResponse, answer: { cache: CacheState; maxAgeSeconds: number }, body: string): void {
    res.writeHead(200, this.statusHeaders(answer, Buffer.byteLength(body)));
    res.end(body);
  }

  /**
   * The headers of a 200 as flat pairs (writeHead takes them as they are, where an object's are
   * copied one by one), in the order every status answer has them.
   */
  private statusHeaders(answer: { cache: CacheState; maxAgeSeconds: number }, bytes: number): string[] {
    const headers = [...this.fixed, 'x-cache', answer.cache, 'cache-control', cacheControl(answer.maxAgeSeconds)];
    headers.push('content-type', JSON_TYPE, 'content-length', String(bytes));
    return headers;
  }

  /**
   * The headers of a status's answer, kept with the status while they stay the same: the
   * answers of one cache entry within a second share their X-Cache and max-age. Node reads the
   * pairs and does not keep or change them.
   */
  private headersOf(answer: StatusAnswer, body: string): string[] {
    const last = this.heads.get(answer.status);
    if (last !== undefined && last.cache === answer.cache && last.maxAgeSeconds === answer.maxAgeSeconds) return last.headers;
    const bytes = last?.bytes ?? Buffer.byteLength(body);
    const headers = this.statusHeaders(answer, bytes);
    this.heads.set(answer.status, { cache: answer.cache, maxAgeSeconds: answer.maxAgeSeconds, headers, bytes });
    return headers;
  }

  /** An error in the one shape, with the client's RateLimit (errors are not stored by shared caches). */
  private answerError(error: unknown, counted: WindowCount | null, res: ServerResponse): void {
    const known = error instanceof ObserverError;
    // Logged as the app's error handler does: a 5xx (a saturated service) is worth knowing of.
    if (logsAsError(error)) this.options.onError(error);
    const headers: Record<string, string> = { 'ratelimit-policy': this.policy };
    if (counted !== null) headers.ratelimit = rateLimitHeaders('status', this.options.rateLimit.limit, counted).RateLimit;
    if (known) for (const [name, value] of Object.entries(error.headers)) headers[name.toLowerCase()] = value;
    const body = JSON.stringify(known ? errorBody(error.code, error.message) : errorBody('internal_error', 'An unexpected error occurred.'));
    this.write(res, known ? error.statusCode : 500, [...this.options.headers, ...Object.entries(headers).flat()], body);
  }

  private write(res: ServerResponse, statusCode: number, headers: string[], body: string): void {
    headers.push('content-type', JSON_TYPE, 'content-length', String(Buffer.byteLength(body)));
    res.writeHead(statusCode, headers);
    res.end(body);
  }

  private failed(error: unknown, res: ServerResponse): void {
    this.options.onError(error);
    if (res.writableEnded) return;
    if (res.headersSent) {
      res.destroy();
      return;
    }
    this.write(res, 500, [...this.options.headers], JSON.stringify(errorBody('internal_error', 'An unexpected error occurred.')));
  }
}
