import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ObserverError, OverloadedError } from '../core/errors.js';
import { MigratingError } from '../store/errors.js';
import { CORS_HEADERS } from './cors.js';
import { bodyStillArriving, discardBody } from './limits.js';
import { methodNotAllowed } from './method-not-allowed.js';

/** The one error shape, {"status":"error","error":"<code>","message":"..."} (docs/api.md, "Errors"). */
export function errorBody(code: string, message: string) {
  return { status: 'error' as const, error: code, message };
}

interface ValidationIssue {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** "Parameter "limit" (querystring) must be <= 50" from an Ajv issue. */
export function describeValidation(issue: ValidationIssue, context: string | undefined): string {
  const where = context === 'params' ? 'path' : context === 'querystring' ? 'query' : (context ?? 'request');
  let name = issue.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (issue.keyword === 'required' && typeof issue.params.missingProperty === 'string') {
    name = issue.params.missingProperty;
    return `The ${where} parameter "${name}" is required.`;
  }
  if (issue.keyword === 'additionalProperties' && typeof issue.params.additionalProperty === 'string') {
    return `Unknown ${where} parameter "${issue.params.additionalProperty}".`;
  }
  if (issue.keyword === 'pattern' && String(issue.params.pattern).includes('[0-9a-fA-F]{3}')) {
    return `The ${where} parameter "${name}" must be a colour: #RGB or #RRGGBB, with or without the #.`;
  }
  const allowed = issue.params.allowedValues;
  const rule =
    issue.keyword === 'enum' && Array.isArray(allowed)
      ? `must be one of: ${allowed.map(String).join(', ')}`
      : (issue.message ?? 'is invalid');
  return name === '' ? `The ${where} ${rule}.` : `The ${where} parameter "${name}" ${rule}.`;
}

/**
 * Fastify's client errors that users meet most, as our code and sentence (and status, where
 * ours differs); any other is `bad_request`.
 */
const FASTIFY_CLIENT_ERRORS: Record<string, [string, string, number?]> = {
  FST_ERR_BAD_URL: ['bad_request', 'The URL holds malformed percent-encoding.'],
  // A path parameter over the router's maxParamLength: a bad parameter like any other, not a 414.
  FST_ERR_MAX_PARAM_LENGTH: ['invalid_parameter', 'A path parameter is longer than this service accepts.', 400],
  FST_ERR_CTP_BODY_TOO_LARGE: ['body_too_large', 'The request body is larger than this route accepts (see its documentation for the limit).'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ['unsupported_media_type', 'The request body must be sent as application/json.'],
  FST_ERR_CTP_EMPTY_JSON_BODY: ['invalid_body', 'The request body is empty; send a JSON object.'],
  FST_ERR_CTP_INVALID_JSON_BODY: ['invalid_body', 'The request body is not valid JSON.'],
};

/**
 * Any error as a client sees it: an ObserverError as it is; a failed validation, a 400
 * `invalid_parameter` naming the parameter; Fastify's other client errors, their status with a
 * code and sentence; anything else, a 500 `internal_error` (its detail stays in the log).
 */
export function publicError(error: FastifyError | ObserverError): ObserverError {
  if (error instanceof ObserverError) return error;
  if (error.validation) {
    const issue = error.validation[0] as ValidationIssue | undefined;
    return new ObserverError('invalid_parameter', 400, issue ? describeValidation(issue, error.validationContext) : 'The request is invalid.');
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    // Fastify's own client errors (bad JSON, unsupported media type, ...) carry safe messages;
    // the common ones get a code and a sentence of our own.
    const known = FASTIFY_CLIENT_ERRORS[error.code ?? ''];
    return new ObserverError(known?.[0] ?? 'bad_request', known?.[2] ?? status, known?.[1] ?? error.message);
  }
  return new ObserverError('internal_error', 500, 'An unexpected error occurred.', { cause: error });
}

/** Headers a route may have set for the answer it meant to give, which an error must not carry. */
const SUCCESS_ONLY_HEADERS = ['cache-control', 'etag', 'x-render-cache', 'x-cache'];

/**
 * Whether an error is worth a log line of its own: a 5xx, but not shed load (logged once per
 * episode by the admission control, http/admission.ts), nor stored data asked for during an
 * upgrade (the answer an upgrade is expected to give; the migration logs its own progress).
 */
export function logsAsError(error: unknown): boolean {
  if (error instanceof OverloadedError || error instanceof MigratingError) return false;
  return !(error instanceof ObserverError) || error.statusCode >= 500;
}

/**
 * The app's error handler: the error in the one shape, and a 5xx logged. An error is never
 * cached as the image or answer the route was about to send would have been. A request refused
 * before its body has all arrived has the rest read and dropped first (limits.ts, discardBody),
 * so that a client still writing it can read the refusal; then its connection closes.
 */
export function answerError(error: FastifyError | ObserverError, request: FastifyRequest, reply: FastifyReply) {
  const answer = publicError(error);
  if (answer.statusCode >= 500 && logsAsError(error)) request.log.error({ err: error }, error instanceof ObserverError ? 'request failed' : 'unexpected error');
  for (const name of SUCCESS_ONLY_HEADERS) reply.removeHeader(name);
  reply.code(answer.statusCode).headers(answer.headers);
  const body = errorBody(answer.code, answer.message);
  if (!bodyStillArriving(request.raw)) return reply.send(body);
  reply.header('connection', 'close');
  return discardBody(request.raw, request.routeOptions.bodyLimit).then(() => {
    reply.send(body);
  });
}

/**
 * Fastify's `frameworkErrors`: a URL the router refuses (malformed percent-encoding, an
 * over-long parameter) is answered before any hook, the CORS headers' included.
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  reply.headers(CORS_HEADERS);
  return answerError(error, request, reply);
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(answerError);
}

/** 405 with `Allow` for a known path (`allowed`: the methods it is served with), else 404. */
function unroutedRefusal(request: FastifyRequest, allowed: (path: string) => string[]): ObserverError {
  const path = request.url.split('?')[0] ?? '';
  const methods = allowed(path);
  if (methods.length > 0) return methodNotAllowed(request.method, path, methods);
  return new ObserverError('not_found', 404, `No route ${request.method} ${path.slice(0, 200)}.`);
}

/**
 * 404 in the one error shape for unknown routes, 405 with `Allow` for a known path asked with
 * another method (`allowed`: the methods a path is served with, none when unknown), after
 * `charge` (a rate-limit tier). Both are answered as the request arrives, before Fastify would
 * read and parse a body it carries: a wrong method is a 405 whatever its body.
 */
export function registerNotFound(
  app: FastifyInstance,
  charge: (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void,
  allowed: (path: string) => string[],
): void {
  app.addHook('onRequest', (request, reply, done) => {
    if (!request.is404) return done();
    charge(request, reply, (error) => done(error ?? unroutedRefusal(request, allowed)));
  });
  // Every request it would see is answered by the hook above.
  app.setNotFoundHandler((request) => {
    throw unroutedRefusal(request, allowed);
  });
}
