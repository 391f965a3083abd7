/**
 * The steps every request goes through, whichever entrance answers it: Fastify's routes (one
 * hook per stage runs the whole list: registerRequestSteps) or the front (fast-status.ts runs
 * the same list itself). Work that every request needs is a step in this list, never a request
 * hook of its own on the application, which the front would not run. A step has any of:
 *  - `headers`: carried by every answer (CORS). The writers that answer on the raw response
 *    (status-answer.ts, routes/health.ts) write them from `RequestSteps.headerPairs`;
 *  - `before`: runs before the answer and may refuse the request with an ObserverError, which
 *    is the answer, in the one error shape (the front hands a refused request to Fastify, which
 *    runs the steps again and answers it: a `before` decides, it counts nothing);
 *  - `after`: runs once the answer is sent (its record: /stats, metrics, slow-request log).
 * Steps run in the order of the list.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import type { ObserverError } from '../core/errors.js';

/** A request as the steps see it. */
export interface StepRequest {
  readonly method: string;
  readonly headers: IncomingHttpHeaders;
  /** The URL's path, without its query string. */
  readonly path: string;
  /**
   * The matched route's template (`/api/v1/status/:address`); null when no route serves the
   * request's method on its path (a 404 or 405).
   */
  readonly route: string | null;
  /** Whether the matched route takes a request body (its schema declares one). */
  readonly takesBody: boolean;
}

export interface RequestStep {
  /** What the step is, for a reader and a log line. */
  readonly name: string;
  readonly headers?: Readonly<Record<string, string>>;
  before?(request: StepRequest): ObserverError | undefined;
  after?(request: StepRequest, statusCode: number, elapsedMs: number, log: FastifyBaseLogger): void;
}

export class RequestSteps {
  /** Every step's headers, in one object (Fastify's `reply.headers`). */
  readonly headers: Readonly<Record<string, string>>;
  /** The same, as flat name/value pairs: `writeHead` takes them as they are. */
  readonly headerPairs: readonly string[];
  private readonly befores: ReadonlyArray<NonNullable<RequestStep['before']>>;
  private readonly afters: ReadonlyArray<NonNullable<RequestStep['after']>>;

  constructor(readonly steps: readonly RequestStep[]) {
    this.headers = Object.assign({}, ...steps.map((step) => step.headers ?? {})) as Record<string, string>;
    this.headerPairs = Object.entries(this.headers).flat();
    this.befores = steps.flatMap((step) => (step.before ? [step.before.bind(step)] : []));
    this.afters = steps.flatMap((step) => (step.after ? [step.after.bind(step)] : []));
  }

  /** Runs the steps before the answer; the first refusal stops them and is returned. */
  before(request: StepRequest): ObserverError | undefined {
    for (const before of this.befores) {
      const refusal = before(request);
      if (refusal) return refusal;
    }
    return undefined;
  }

  /** Runs the steps after the answer. */
  after(request: StepRequest, statusCode: number, elapsedMs: number, log: FastifyBaseLogger): void {
    for (const after of this.afters) after(request, statusCode, elapsedMs, log);
  }
}

/** What a Fastify request is to the steps (read once routing has matched it: onRequest on). */
function stepRequest(request: FastifyRequest): StepRequest {
  const { url, method, routeOptions } = request;
  const query = url.indexOf('?');
  return {
    method,
    headers: request.headers,
    path: query === -1 ? url : url.slice(0, query),
    // A route that only answers that its path is not served with this method is none.
    route: routeOptions.config.refusesMethod ? null : (routeOptions.url ?? null),
    takesBody: routeOptions.schema?.body !== undefined,
  };
}

/** Runs the steps for every request Fastify answers: before it on onRequest, after it on onResponse. */
export function registerRequestSteps(app: FastifyInstance, steps: RequestSteps): void {
  app.addHook('onRequest', function requestStepsBefore(request, reply, done) {
    reply.headers(steps.headers);
    done(steps.before(stepRequest(request)));
  });
  app.addHook('onResponse', function requestStepsAfter(request, reply, done) {
    steps.after(stepRequest(request), reply.statusCode, reply.elapsedTime, request.log);
    done();
  });
}
