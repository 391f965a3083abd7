/**
 * HTTP requests in traces (docs/operations.md, "Traces"): each request is answered within its
 * server span (the tracer's `serve`, around the server's handler, so that the front in
 * fast-status.ts and Fastify alike answer inside it), named after its route once the router
 * has found it. Reading a request's body leaves the span's context behind (the body arrives in
 * the socket's callbacks), so the handler is called with it current again.
 *
 * Nothing here runs when traces are off: no hook is added and the handler is not wrapped.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Tracer } from '../core/tracing.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** The server's handler, each request answered within its span; the handler itself when traces are off. */
export function tracedHandler(tracer: Tracer, handler: Handler): Handler {
  if (!tracer.enabled) return handler;
  return (req, res) => tracer.serve(req, res, () => handler(req, res));
}

/** The route's name on the span, and the span current for the handler; nothing when traces are off. */
export function registerTracing(app: FastifyInstance, tracer: Tracer): void {
  if (!tracer.enabled) return;
  app.addHook('onRequest', function traceRoute(request, _reply, done) {
    tracer.route(request.raw, request.routeOptions.url ?? null);
    done();
  });
  app.addHook('preHandler', function resumeTrace(request, _reply, done) {
    tracer.resume(request.raw, done);
  });
}
