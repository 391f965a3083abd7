/**
 * What the OpenAPI document says about answers: the error codes, the response headers, and
 * builders for the responses of a route (a JSON body, an image, the errors it can answer), so
 * that every route declares its statuses, media types and headers the same way. The route
 * schemas stay the one source: Fastify serialises with them and @fastify/swagger documents
 * them; `contractDocument` fixes the few things swagger cannot express.
 */
import { Type, type TSchema } from 'typebox';

/** Every `error` an error body can carry, by the status it comes with (docs/api.md, "Errors"). */
export const API_ERRORS = {
  bad_request: [400, 'a request refused before any route: a malformed request line or header, no `Host`, a URL of malformed percent-encoding'],
  invalid_address: [400, 'the address is not a host name, IP or host:port Observer accepts'],
  invalid_query: [400, 'query flags that contradict each other (`legacy` with `bedrock`, `edition` with either)'],
  invalid_parameter: [400, 'a parameter or body field outside its schema (type, bounds, pattern, unknown field)'],
  invalid_body: [400, 'a request body that is empty or not valid JSON'],
  invalid_cursor: [400, 'a `/trends` cursor naming a server this service does not rank'],
  target_refused: [400, 'the address resolves to a non-public IP (a test vote: or to a port below 1024 on a public address)'],
  invalid_webhook: [400, 'a webhook URL Observer cannot send to (scheme, credentials, form)'],
  webhook_refused: [400, 'a webhook URL on a non-public address or a system port'],
  webhook_not_found: [400, "a webhook URL whose host name has no DNS records"],
  unauthorized: [401, 'a watch route without the watch\'s management token'],
  not_found: [404, 'no such route, widget font or server history'],
  method_not_allowed: [405, 'a path asked with a method it is not served with (`Allow` lists those it is)'],
  host_not_found: [404, 'the host name has no A, AAAA or SRV record'],
  watch_not_found: [404, 'no watch with this id'],
  request_timeout: [408, 'a request not received within `HTTP_HEADERS_TIMEOUT_MS` (its head) or `HTTP_REQUEST_TIMEOUT_MS` (all of it)'],
  too_many_unverified: [409, 'the client already holds as many unverified watches as allowed'],
  too_many_watches: [409, 'the client already holds `WATCHES_PER_CLIENT` watches'],
  too_many_server_watches: [409, 'the server already has `WATCHES_PER_SERVER` verified watches'],
  not_verified: [409, 'a test delivery of a watch not verified yet, or paused'],
  body_too_large: [413, 'a request body over `HTTP_BODY_LIMIT_BYTES`'],
  body_not_allowed: [413, 'a request body sent to a route that takes none'],
  unsupported_media_type: [415, 'a request body not sent as `application/json`'],
  headers_too_large: [431, 'a request line and headers over 16 KiB (a long URL included)'],
  rate_limited: [429, "the client's per-minute limit of the route's tier is spent"],
  target_rate_limited: [429, "the server IP has had its pings of the minute, and no recent success can stand in"],
  watch_capacity: [429, 'the instance holds as many verified watches as its check budget can look at (`WATCHES_MAX`)'],
  test_rate_limited: [429, 'a test delivery of this watch was sent less than a minute ago'],
  webhook_rate_limited: [429, "the webhook host's deliveries of the minute are spent"],
  internal_error: [500, 'an unexpected error (logged)'],
  maintenance: [503, 'the instance runs with `MAINTENANCE_MODE=true`'],
  migrating: [503, 'a schema migration runs (after an upgrade); stored data is served again once it is done'],
  overloaded: [503, 'the instance sheds new renders or pings under load'],
  service_busy: [503, '`MAX_CONCURRENT_PINGS` pings are in flight and no recent success can stand in'],
  store_unavailable: [503, 'the history database cannot answer and no earlier answer is kept'],
  webhook_dns_failure: [503, "DNS failed for the webhook URL's host name just now"],
  shutting_down: [503, 'the instance is stopping'],
} as const satisfies Record<string, readonly [number, string]>;

export type ApiErrorCode = keyof typeof API_ERRORS;

/**
 * The `error` of an error body. Declared as `anyOf` of string constants rather than `enum`, so
 * that every generator types it as a union of string literals a JSON value can be assigned to
 * (swagger-typescript-api turns a named `enum` into a TypeScript `enum`).
 */
export const ApiErrorCodeSchema = Type.Union(
  (Object.keys(API_ERRORS) as ApiErrorCode[]).map((code) => Type.Literal(code)),
  {
    $id: 'ApiErrorCode',
    description:
      'Stable machine-readable error code: ' +
      Object.entries(API_ERRORS)
        .map(([code, [status, meaning]]) => `\`${code}\` (${status}: ${meaning})`)
        .join(', ') +
      '.',
  },
);

/** Response headers by name: their schema, and what they say. */
const HEADERS = {
  'X-Cache': Type.Union([Type.Literal('HIT'), Type.Literal('MISS'), Type.Literal('STALE')], {
    description: '`HIT`: from the cache; `MISS`: a new ping or read; `STALE`: the last good answer, served instead of a fresh one.',
  }),
  'Cache-Control': Type.String({ description: 'How long shared and browser caches may keep the answer.', examples: ['public, max-age=60'] }),
  ETag: Type.String({
    pattern: '^(W/)?"[^"]*"$',
    description: 'Names what the answer shows; send it back as `If-None-Match` to get a 304 while it is unchanged.',
  }),
  'X-Render-Cache': Type.Union([Type.Literal('HIT'), Type.Literal('MISS')], { description: 'Whether the image came from the render cache.' }),
  'RateLimit-Policy': Type.String({
    pattern: '^"[a-z][a-z-]*";q=\\d+;w=\\d+$',
    description:
      'The limit that applies (IETF RateLimit fields): its name (a rate-limit tier, or `watch-test` and `webhook-host` on ' +
      'a refused test delivery), its quota `q` and window `w` in seconds.',
    examples: ['"status";q=120;w=60'],
  }),
  RateLimit: Type.String({
    pattern: '^"[a-z][a-z-]*";r=\\d+;t=\\d+$',
    description:
      "The client's budget in the tier: `r` requests left, `t` seconds until the window resets. Never on an answer shared caches may store.",
    examples: ['"status";r=87;t=42'],
  }),
  'Retry-After': Type.Integer({ minimum: 0, description: 'Seconds to wait before asking again.' }),
  'WWW-Authenticate': Type.Literal('Bearer', { description: 'The scheme the route expects.' }),
} as const;

export type HeaderName = keyof typeof HEADERS;

const REQUIRED_HEADER = 'x-observer-required';

/**
 * Headers of a response: a name alone is sent on some answers of the status, `!` after it on
 * every one. `required` is carried in the schema by a vendor key that `contractDocument` turns
 * into the OpenAPI header's own `required` (swagger copies each header into `schema`).
 */
export function headers(...names: Array<HeaderName | `${HeaderName}!`>) {
  const out: Record<string, TSchema> = {};
  for (const name of names) {
    const bare = name.replace(/!$/, '') as HeaderName;
    out[bare] = name.endsWith('!') ? { ...HEADERS[bare], [REQUIRED_HEADER]: true } : HEADERS[bare];
  }
  return out;
}

/** A JSON response: `schema` as `application/json`, with its headers. */
export function json<T extends TSchema>(description: string, schema: T, headerSchemas: Record<string, TSchema> = {}) {
  return { description, headers: headerSchemas, content: { 'application/json': { schema } } };
}

/** A binary response (an image, a font): its media types, with its headers. */
export function binary(description: string, mediaTypes: readonly string[], headerSchemas: Record<string, TSchema> = {}) {
  const content: Record<string, { schema: TSchema }> = {};
  for (const type of mediaTypes) content[type] = { schema: Type.String({ format: 'binary', contentMediaType: type }) };
  return { description, headers: headerSchemas, content };
}

/** A text response (HTML, SVG), with its headers. */
export function text(description: string, mediaType: string, headerSchemas: Record<string, TSchema> = {}) {
  return { description, headers: headerSchemas, content: { [mediaType]: { schema: Type.String() } } };
}

/** A response without a body (304, 204). */
export function empty(description: string, headerSchemas: Record<string, TSchema> = {}) {
  return { type: 'null' as const, description, headers: headerSchemas };
}

/** The errors of a route with path parameters: the router refuses malformed percent-encoding in them (400 `bad_request`). */
export function withPathParameters(errors: RouteErrors): RouteErrors {
  return { ...errors, 400: [...(errors[400] ?? []), 'bad_request'] };
}

/** The error responses of a route: the codes each status can carry, beyond the ones every route has. */
export type RouteErrors = Partial<Record<400 | 401 | 404 | 409 | 413 | 415 | 429 | 503, ApiErrorCode[]>>;

export interface ErrorOptions {
  /** The route is charged to a rate-limit tier: its answers carry `RateLimit-Policy` and `RateLimit`. */
  limited?: boolean;
  /** The route takes a request body (no 413 `body_not_allowed`). */
  takesBody?: boolean;
  /** The route answers during maintenance (health): no 503 `maintenance`. */
  duringMaintenance?: boolean;
}

/**
 * Every error a route can answer, as JSON `ErrorResponse` with its headers. Besides `errors`,
 * every route can answer what a request is refused with before any route (400 `bad_request`,
 * 408 `request_timeout`, 431 `headers_too_large`: http/wire-errors.ts), 500 `internal_error`,
 * 503 `maintenance` (unless it answers during maintenance) and the refusals of its body
 * (http/limits.ts): 413 `body_not_allowed` when it takes none; else 400 `invalid_body`, 413
 * `body_too_large` and 415 `unsupported_media_type`.
 */
export function errorResponses(errors: RouteErrors, options: ErrorOptions = {}) {
  const all: Record<number, ApiErrorCode[] | undefined> = { ...errors };
  const add = (status: number, code: ApiErrorCode) => {
    if (!all[status]?.includes(code)) all[status] = [...(all[status] ?? []), code];
  };
  add(400, 'bad_request');
  add(408, 'request_timeout');
  add(431, 'headers_too_large');
  if (options.takesBody) {
    add(400, 'invalid_body');
    add(413, 'body_too_large');
    add(415, 'unsupported_media_type');
  } else {
    add(413, 'body_not_allowed');
  }
  add(500, 'internal_error');
  if (!options.duringMaintenance) add(503, 'maintenance');
  const out: Record<number, ReturnType<typeof json>> = {};
  for (const [status, codes] of Object.entries(all)) {
    if (codes === undefined) continue;
    out[Number(status)] = json(errorDescription(codes), Type.Ref('ErrorResponse'), errorHeaders(Number(status), options));
  }
  return out;
}

function errorDescription(codes: readonly ApiErrorCode[]): string {
  return `\`error\`: ${codes.map((code) => `\`${code}\` (${API_ERRORS[code][1]})`).join('; ')}.`;
}

/**
 * The headers of an error: a limited route's RateLimit fields (on every 429; on other errors
 * once the route's limit was counted), `Retry-After` on 429 and 503, the scheme on 401.
 */
function errorHeaders(status: number, options: ErrorOptions): Record<string, TSchema> {
  const limits: Array<HeaderName | `${HeaderName}!`> = options.limited ? (status === 429 ? ['RateLimit-Policy!', 'RateLimit!'] : ['RateLimit-Policy', 'RateLimit']) : [];
  if (status === 429 || status === 503) return headers(...limits, 'Retry-After!');
  if (status === 401) return headers(...limits, 'WWW-Authenticate!');
  return headers(...limits);
}

interface OpenApiHeader {
  schema?: Record<string, unknown>;
  required?: boolean;
}

interface OpenApiOperation {
  operationId?: string;
  summary?: string;
  description?: string;
  parameters?: Array<{ in: string; required?: boolean; schema?: { default?: unknown } }>;
  responses?: Record<string, { headers?: Record<string, OpenApiHeader>; content?: unknown }>;
}

interface OpenApiDocument {
  paths?: Record<string, Record<string, OpenApiOperation>>;
}

/**
 * A HEAD operation (every GET route serves one): the GET's answers without their bodies, named
 * `head…` where the GET is `get…`.
 */
function headOperation(path: string, head: OpenApiOperation): void {
  const id = head.operationId?.replace(/-head$/, '');
  if (id !== undefined) head.operationId = id.startsWith('get') ? `head${id.slice(3)}` : `${id}Head`;
  head.summary = `${head.summary ?? path} (headers only)`;
  head.description = `What \`GET ${path}\` answers, headers only: the same statuses and headers, no body.`;
  for (const response of Object.values(head.responses ?? {})) delete response.content;
}

/**
 * What @fastify/swagger cannot say from the route schemas, said once over the document:
 *  - a parameter the API defaults is one a client may leave out: the schemas list it as
 *    required so that validation fills the default in, but the document must not ask for it;
 *  - a header marked required by `headers()` gets the OpenAPI header's own `required: true`;
 *  - a HEAD operation answers without a body (headOperation).
 */
export function contractDocument<T extends OpenApiDocument>(document: T): T {
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    if (item.head) headOperation(path, item.head);
    for (const operation of Object.values(item)) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in !== 'path' && parameter.schema?.default !== undefined) parameter.required = false;
      }
      for (const response of Object.values(operation.responses ?? {})) {
        for (const header of Object.values(response.headers ?? {})) {
          if (header.schema?.[REQUIRED_HEADER] === undefined) continue;
          delete header.schema[REQUIRED_HEADER];
          header.required = true;
        }
      }
    }
  }
  return document;
}
