/**
 * HTTP requests in traces (docs/monitoring.md, "Traces"): each request is answered within its
 * server span (the tracer's `serve`, around the server's handler, so that the front in
 * fast-status.ts and Fastify alike answer inside it), named after its route by a request step
 * (request-steps.ts), which both entrances run once the route is known.
 *
 * A request with a body is handled once the body's stream events have come in, and Node does
 * not promise that those keep the request's context; so Fastify calls the handler with the
 * request's span current again: a hook of Fastify's alone, since the front answers no request
 * with a body.
 *
 * Nothing here runs when traces are off: no step or hook is added, the handler is not wrapped.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Tracer } from '../core/tracing.js';
import type { RequestStep } from './request-steps.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** The server's handler, each request answered within its span; the handler itself when traces are off. */
export function tracedHandler(tracer: Tracer, handler: Handler): Handler {
  if (!tracer.enabled) return handler;
  return (req, res) => tracer.serve(req, res, () => handler(req, res));
}

/** The step that names the request's span after its route (`GET /api/v1/status/:address`). */
export function traceStep(tracer: Tracer): RequestStep {
  return {
    name: 'trace route',
    before(request) {
      tracer.route(request.method, request.route);
      return undefined;
    },
  };
}

/** The request's span current for its handler, after its body was read; nothing when traces are off. */
export function registerTracing(app: FastifyInstance, tracer: Tracer): void {
  if (!tracer.enabled) return;
  app.addHook('preHandler', function resumeTrace(request, _reply, done) {
    tracer.resume(request.raw, done);
  });
}
