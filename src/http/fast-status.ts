/**
 * The front: plain status requests and health, answered before Fastify's per-request
 * machinery (routing, hook runners, reply building), which costs a cached status answer more
 * than anything Observer decides.
 *
 * It only recognises requests; it answers none by itself. A request that is exactly
 * `GET /api/v1/status/<address>` (no query string, an address of the plain characters of host
 * names, IPv4 literals and ports, no percent-encoding, no body) goes to the status answer's one
 * writer (status-answer.ts), and `GET /api/v1/status` exactly to the health route's
 * (routes/health.ts), the same ones the Fastify routes call; the request is then recorded by
 * the recorder Fastify's requests go through (request-record.ts). Everything else goes to
 * Fastify: other methods, query strings, bracketed IPv6, percent-encoded or over-long
 * addresses, which the route decodes and validates.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import { announcesBody } from './limits.js';
import type { RecordRequest } from './request-record.js';
import { writeHealth } from './routes/health.js';
import type { StatusAnswers } from './status-answer.js';
import type { Tracer } from '../core/tracing.js';

export interface FastStatusOptions {
  answers: StatusAnswers;
  /** The path prefix of the API (`/api/v1`). */
  prefix: string;
  /** The health body (routes/health.ts). */
  health: () => string;
  /** The recorder of every answered request; null when nothing is recorded. */
  record: RecordRequest | null;
  log: FastifyBaseLogger;
  /** A recorder that failed: reported. */
  onError: (error: unknown) => void;
  /** Names the request's span after its route (tracing.ts). */
  tracer?: Tracer;
}

/**
 * An address taken as it stands: what the route would receive undecoded, and within its
 * schema's 255 characters. Anything else (`%`, `[`, `/`, …) is left to Fastify.
 */
const PLAIN_ADDRESS = /^[A-Za-z0-9._:-]{1,255}$/;

export class FastStatus {
  private readonly healthPath: string;
  private readonly statusPrefix: string;
  /** The route template, as Fastify names it in the metrics and logs. */
  private readonly statusRoute: string;

  constructor(private readonly options: FastStatusOptions) {
    this.healthPath = `${options.prefix}/status`;
    this.statusPrefix = `${options.prefix}/status/`;
    this.statusRoute = `${options.prefix}/status/:address`;
  }

  /** Answers the request and returns true, or returns false for Fastify to answer it. */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    const { url } = req;
    if (req.method !== 'GET' || url === undefined || announcesBody(req.headers)) return false;
    const started = performance.now();
    if (url === this.healthPath) {
      this.options.tracer?.route(req, this.healthPath);
      writeHealth(res, this.options.health());
      this.record(this.healthPath, url, res, started);
      return true;
    }
    if (!url.startsWith(this.statusPrefix)) return false;
    const address = url.slice(this.statusPrefix.length);
    if (!PLAIN_ADDRESS.test(address)) return false;
    this.options.tracer?.route(req, this.statusRoute);
    const served = this.options.answers.serve(req, res, { address });
    if (served === undefined) this.record(this.statusRoute, url, res, started);
    else void served.then(() => this.record(this.statusRoute, url, res, started));
    return true;
  }

  private record(route: string, path: string, res: ServerResponse, started: number): void {
    try {
      this.options.record?.(route, 'GET', path, res.statusCode, performance.now() - started, this.options.log);
    } catch (error) {
      this.options.onError(error);
    }
  }
}
