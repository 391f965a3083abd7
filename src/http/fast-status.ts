/**
 * The front: plain status requests and health, answered before Fastify's per-request
 * machinery (routing, hook runners, reply building), which costs a cached status answer more
 * than anything Observer decides.
 *
 * It only recognises requests; it answers none by itself. A request that is exactly
 * `GET /api/v1/status/<address>` (no query string, an address of the plain characters of host
 * names, IPv4 literals and ports, no percent-encoding) goes to the status answer's one writer
 * (status-answer.ts), and `GET /api/v1/status` exactly to the health route's
 * (routes/health.ts), the same ones the Fastify routes call. Around the answer it runs the
 * request steps (request-steps.ts), the same list Fastify's hooks run: a request a step refuses
 * (a body where none is taken, maintenance) goes to Fastify, which refuses it in the one error
 * shape. Everything else goes to Fastify too: other methods, query strings, bracketed IPv6,
 * percent-encoded or over-long addresses, which the route decodes and validates.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { RequestSteps, StepRequest } from './request-steps.js';
import type { HealthAnswer } from './routes/health.js';
import type { StatusAnswers } from './status-answer.js';

export interface FastStatusOptions {
  answers: StatusAnswers;
  /** The path prefix of the API (`/api/v1`). */
  prefix: string;
  /** The health answer's writer (routes/health.ts). */
  health: HealthAnswer;
  /** What every request goes through, before and after its answer. */
  steps: RequestSteps;
  log: FastifyBaseLogger;
  /** A step that failed after the answer: reported. */
  onError: (error: unknown) => void;
}

/**
 * An address taken as it stands: what the route would receive undecoded, and within its
 * schema's 255 characters. Anything else (`%`, `[`, `/`, …) is left to Fastify.
 */
const PLAIN_ADDRESS = /^[A-Za-z0-9._:-]{1,255}$/;
/** The path of the bulk look-up, whose GET is a 405 (method-not-allowed.ts), not a host. */
const BULK = 'bulk';
const isPlainAddress = (address: string): boolean => PLAIN_ADDRESS.test(address) && address !== BULK;

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
    if (req.method !== 'GET' || url === undefined) return false;
    let route: string;
    if (url === this.healthPath) route = this.healthPath;
    else if (url.startsWith(this.statusPrefix) && isPlainAddress(url.slice(this.statusPrefix.length))) route = this.statusRoute;
    else return false;
    const request: StepRequest = { method: 'GET', headers: req.headers, path: url, route, takesBody: false };
    if (this.options.steps.before(request) !== undefined) return false;
    const started = performance.now();
    if (route === this.healthPath) {
      this.options.health(res);
      this.after(request, res, started);
      return true;
    }
    const served = this.options.answers.serve(req, res, { address: url.slice(this.statusPrefix.length) });
    if (served === undefined) this.after(request, res, started);
    else void served.then(() => this.after(request, res, started));
    return true;
  }

  private after(request: StepRequest, res: ServerResponse, started: number): void {
    try {
      this.options.steps.after(request, res.statusCode, performance.now() - started, this.options.log);
    } catch (error) {
      this.options.onError(error);
    }
  }
}
