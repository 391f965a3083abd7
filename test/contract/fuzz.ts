/**
 * Requests generated from the served OpenAPI document, as a fuzzer of the contract sends them
 * (fuzz.test.ts): for every operation, valid values and boundaries, values outside the
 * parameter grammar and odd encodings, wrong methods (with the bodies clients send them with),
 * wrong media types, bodies just over the limit, bodies where none is taken, heads too large
 * (HEAD included). Each request carries what it must get (`expect`): a fixed answer for a case
 * that decides it (a 405 with `Allow`, a 413, a 431), or `model`: what the values of a valid
 * request imply (fuzz-model.ts), worked out from the request as it is when checked, so that a
 * shrunk request is judged by its own values. A seeded PRNG makes a run repeatable; a failing
 * request is shrunk to the smallest one that still fails.
 */
import type { OpenApiDocument } from './document-check.js';
import { chance, pick, type Expectation, type FuzzContext, type Rng } from './fuzz-model.js';

/** mulberry32: a small, fast, seeded PRNG, good enough to pick test cases. */
export function prng(seed: number): Rng {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface FuzzRequest {
  /** What the case tries, for the report. */
  kind: string;
  /** The document's operation the request was made from (the GET's or HEAD's, whatever method it is sent with). */
  operationId: string;
  method: string;
  /** The operation's path template in the document. */
  path: string;
  /** Path parameter values, as sent (percent-encoded). */
  pathValues: Record<string, string>;
  /** Query parameters as sent (values percent-encoded); a null value is a bare `?name`. */
  query: Array<[string, string | null]>;
  headers: Record<string, string>;
  body?: string;
  /** What the answer must be: fixed by the case, or `model`: what the request's values imply. */
  expect: Expectation | 'model';
  /** What the expectation rests on (query parameter or header names, `body`): kept whole while shrinking. */
  fixed?: string[];
  /** Sent by the one client that spends its rate limits (its answers may be 429 instead). */
  greedy?: boolean;
}

export interface Operation {
  method: string;
  path: string;
  operationId: string;
  parameters: Parameter[];
  /** The JSON schema of the request body, when the operation takes one. */
  body: Schema | null;
}

/** The request's URL below the API prefix. */
export function urlOf(request: FuzzRequest): string {
  const path = request.path.replace(/\{(\w+)\}/g, (_match, name: string) => request.pathValues[name] ?? '');
  const query = request.query.map(([name, value]) => (value === null ? name : `${name}=${value}`)).join('&');
  return query === '' ? path : `${path}?${query}`;
}

/** One line to repeat the request by hand. */
export function describeRequest(request: FuzzRequest, base: string): string {
  const headers = Object.entries(request.headers).map(([name, value]) => ` -H '${name}: ${value.length > 80 ? `${value.slice(0, 40)}…(${value.length} chars)` : value}'`);
  const body = request.body === undefined ? '' : ` --data '${request.body.length > 200 ? `${request.body.slice(0, 100)}…(${request.body.length} bytes)` : request.body}'`;
  const url = urlOf(request);
  const head = request.method === 'HEAD' ? ' --head' : ` -X ${request.method}`;
  return `[${request.kind}] curl${head}${headers.join('')}${body} '${base}${url.length > 300 ? `${url.slice(0, 200)}…(${url.length} chars)` : url}'`;
}

export interface Schema {
  type?: string;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  $ref?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  format?: string;
  default?: unknown;
  examples?: unknown[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
}
export interface Parameter {
  in: string;
  name: string;
  required?: boolean;
  schema: Schema;
  example?: unknown;
}

/** The operations of the document, with what a generator needs of each. */
export function operationsOf(doc: OpenApiDocument): Operation[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, described]) => {
      const operation = described as unknown as { operationId: string; parameters?: Parameter[]; requestBody?: { content?: Record<string, { schema?: Schema }> } };
      const body = operation.requestBody?.content?.['application/json']?.schema ?? null;
      return { method: method.toUpperCase(), path, operationId: operation.operationId, parameters: operation.parameters ?? [], body };
    }),
  );
}

/** The order methods are listed in `Allow` (src/http/method-not-allowed.ts). */
const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** Texts outside the grammar of integers, numbers and flags (src/http/parameter-grammar.ts). */
const NOT_A_NUMBER = ['Infinity', '-Infinity', '1e400', '0x10', '0x50', '6.4e1', '%2064', '64%20', '', 'NaN', '1_0', '%D9%A3', '%2B%2B1', '0b1', '1e2'];
const NOT_A_FLAG = ['TRUE', 'False', 'yes', 'no', '2', '-1', '%20true', 'true%00', 'on', 'Infinity'];
/** Odd texts for any parameter: encodings, control characters, lengths, injections. */
const ODD = [
  '%00', '%FF', '%C0%AF', '%E0%A4%A', '%25', '%F0%9F%98%80', '%0D%0ASet-Cookie:%20a=1', '..%2F..%2Fetc%2Fpasswd', '%2F', '[', '%5B%3A%3A1%5D',
  '%3Cscript%3E', 'a'.repeat(256), 'x'.repeat(1001), '-', '%C2%A7k', '1.2.3.4.5', '%E2%80%AE', '999999999999999999999', '-0', '.5', '%09',
];

/** The constant values a schema allows, if it is an enumeration. */
function constants(schema: Schema): unknown[] | null {
  if (schema.enum) return schema.enum;
  if (schema.const !== undefined) return [schema.const];
  const options = schema.anyOf ?? schema.oneOf;
  if (options && options.every((option) => constants(option) !== null)) return options.flatMap((option) => constants(option)!);
  return null;
}

function randomHex(rng: Rng, digits: number): string {
  return Array.from({ length: digits }, () => '0123456789abcdefABCDEF'[Math.floor(rng() * 22)]).join('');
}

function uuid(rng: Rng): string {
  const h = () => randomHex(rng, 4).toLowerCase();
  return `${h()}${h()}-${h()}-4${h().slice(1)}-a${h().slice(1)}-${h()}${h()}${h()}`;
}

const isColour = (name: string, schema: Schema) => schema.pattern?.includes('0-9a-fA-F') === true || /Color$|^gradient(From|To)$/.test(name);

/**
 * A valid value for a parameter or body field named `name`, unencoded: the schema's constants,
 * bounds and examples, and the meanings it cannot say (an address, a colour, a font, a watch
 * id, a webhook URL). A string may be null: a bare flag.
 */
function validText(rng: Rng, name: string, schema: Schema, context: FuzzContext, operationId: string): string | null {
  const listed = constants(schema);
  if (listed) return String(pick(rng, listed));
  if (schema.type === 'boolean') return pick(rng, ['true', 'false', '1', '0', '', null]);
  if (schema.type === 'integer' || schema.type === 'number') {
    const min = schema.minimum ?? 0;
    const max = schema.maximum ?? Math.max(min + 1000, 1000);
    const value = pick(rng, [min, max, min + Math.floor(rng() * (max - min + 1))]);
    if (schema.type === 'number' && chance(rng, 0.3) && value < max) return String(value + Math.round(rng() * 99) / 100);
    return chance(rng, 0.1) && value >= 0 ? `00${value}` : String(value);
  }
  if (isColour(name, schema)) return `${chance(rng, 0.5) ? '#' : ''}${randomHex(rng, pick(rng, [3, 6]))}`;
  if (schema.format === 'uuid') return uuid(rng);
  if (['address', 'server', 'target', 'host'].includes(name)) {
    const texts = context.targets.map((target) => target.text);
    return pick(rng, operationId.endsWith('ServerWidget') ? [...texts, 'demo', 'DEMO'] : texts);
  }
  if (name === 'id') return pick(rng, [context.watch.id, context.watch.id, uuid(rng), 'not-a-watch']);
  if (name === 'url') return pick(rng, context.webhooks).url;
  if (name === 'motd') return pick(rng, ['§aHello §lworld', '&6Gold &ktext', 'plain', '§x§f§f§0§0§0§0hex\nline two']);
  if (name === 'font') return pick(rng, ['Inter', 'roboto', 'POPPINS', 'Montserrat', 'outfit']);
  if (name === 'customHeight') return `${50 + Math.floor(rng() * 551)}${chance(rng, 0.5) ? 'px' : ''}`;
  if (name === 'file') return pick(rng, ['inter-latin-400-normal.woff2', 'inter-latin-400-normal.woff2', 'nothing.woff2']);
  const examples = [...(schema.examples ?? []), ...(schema.default !== undefined ? [schema.default] : [])];
  if (examples.length > 0) return String(pick(rng, examples));
  const length = Math.max(schema.minLength ?? 1, Math.min(schema.maxLength ?? 12, 1 + Math.floor(rng() * 12)));
  return Array.from({ length }, () => pick(rng, [...'abcxyz019-_'])).join('');
}

/** A value of `schema` for a JSON body: objects, arrays, and the scalars of validText. */
function validJson(rng: Rng, name: string, schema: Schema, context: FuzzContext, operationId: string, doc: OpenApiDocument): unknown {
  if (schema.$ref) return validJson(rng, name, resolveRef(doc, schema.$ref), context, operationId, doc);
  if (schema.allOf) return Object.assign({}, ...schema.allOf.map((part) => validJson(rng, name, part, context, operationId, doc) as object));
  const branches = (schema.oneOf ?? schema.anyOf)?.filter((branch) => branch.properties !== undefined || branch.type === 'object');
  if (branches && branches.length > 0 && schema.properties === undefined) return validJson(rng, name, pick(rng, branches), context, operationId, doc);
  if (schema.type === 'object' || schema.properties) return validObject(rng, schema, context, operationId, doc);
  if (schema.type === 'array' && schema.items) {
    const count = Math.max(schema.minItems ?? 1, Math.min(schema.maxItems ?? 4, 1 + Math.floor(rng() * 4)));
    return Array.from({ length: count }, () => validJson(rng, name, schema.items!, context, operationId, doc));
  }
  const text = validText(rng, name, schema, context, operationId);
  if (schema.type === 'boolean') return text === 'true' || text === '1' || text === '' || text === null;
  if (schema.type === 'integer' || schema.type === 'number') return Number(text);
  return text ?? '';
}

/**
 * An object of `schema`: its required properties, some of its others, and of the sets of
 * properties a `oneOf` (or `anyOf`) of `required` lists asks for, one set, without the
 * properties only the other sets name when exactly one may be given.
 */
function validObject(rng: Rng, schema: Schema, context: FuzzContext, operationId: string, doc: OpenApiDocument): Record<string, unknown> {
  const properties = schema.properties ?? {};
  const choices = (schema.oneOf ?? schema.anyOf ?? []).filter((branch) => branch.required !== undefined);
  const chosen = choices.length > 0 ? pick(rng, choices) : null;
  const excluded = new Set(schema.oneOf && chosen ? choices.flatMap((branch) => branch.required!).filter((prop) => !chosen.required!.includes(prop)) : []);
  const required = new Set([...(schema.required ?? []), ...(chosen?.required ?? [])]);
  const object: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(properties)) {
    if (excluded.has(name) || (!required.has(name) && !chance(rng, 0.35))) continue;
    object[name] = validJson(rng, name, property, context, operationId, doc);
  }
  return object;
}

function resolveRef(doc: OpenApiDocument, ref: string): Schema {
  const name = ref.replace('#/components/schemas/', '');
  return (doc.components.schemas[name] ?? {}) as Schema;
}

/** A request of `operation` with valid values: path parameters, a random share of the query, its body and credentials. */
function validRequest(rng: Rng, operation: Operation, context: FuzzContext): FuzzRequest {
  const { method, path, operationId, parameters } = operation;
  const pathValues: Record<string, string> = {};
  const query: Array<[string, string | null]> = [];
  for (const parameter of parameters) {
    const text = validText(rng, parameter.name, parameter.schema, context, operationId);
    if (parameter.in === 'path') pathValues[parameter.name] = encodeURIComponent(text ?? 'x');
    else if (parameter.in === 'query' && (parameter.required || chance(rng, 0.35))) query.push([parameter.name, text === null ? null : encodeURIComponent(text)]);
  }
  // The icon route asks for `address` or `server` (a rule its parameters cannot state): mostly one is there.
  if (parameters.some((p) => p.name === 'server') && !query.some(([name]) => name === 'address' || name === 'server') && chance(rng, 0.9)) {
    query.push([pick(rng, ['address', 'server']), encodeURIComponent(pick(rng, context.targets).text)]);
  }
  const request: FuzzRequest = { kind: 'valid', operationId, method, path, pathValues, query, headers: {}, expect: 'model' };
  if (operation.body) {
    request.headers['content-type'] = pick(rng, ['application/json', 'application/json; charset=utf-8']);
    request.body = JSON.stringify(validJson(rng, 'body', operation.body, context, operationId, context.doc));
  }
  if (path.startsWith('/watches/')) withCredentials(rng, request, context);
  return request;
}

/** A watch route's bearer token: mostly the watch's; a DELETE with it ends one of the disposable watches. */
function withCredentials(rng: Rng, request: FuzzRequest, context: FuzzContext): void {
  const token = chance(rng, 0.7) ? context.watch.token : pick(rng, ['nonsense', '']);
  if (request.method === 'DELETE' && request.pathValues.id === context.watch.id && token === context.watch.token) {
    const disposable = context.disposable[context.disposed++];
    // None left: the kept watch is asked without its token.
    if (disposable) {
      request.pathValues.id = disposable.id;
      request.headers.authorization = `Bearer ${disposable.token}`;
    } else request.headers.authorization = 'Bearer nonsense';
    return;
  }
  if (chance(rng, 0.9)) request.headers.authorization = `Bearer ${token}`;
}

/** The `Allow` of a path item: its methods (HEAD with GET), and OPTIONS. */
export function allowOf(doc: OpenApiDocument, path: string): string {
  const methods = new Set(Object.keys(doc.paths[path] ?? {}).map((method) => method.toUpperCase()));
  methods.add('OPTIONS');
  return METHOD_ORDER.filter((method) => methods.has(method)).join(', ');
}

/** One request for an operation the PRNG picks, of the kind it picks. */
export function generate(rng: Rng, context: FuzzContext, operations: Operation[]): FuzzRequest {
  const operation = pick(rng, operations);
  const base = validRequest(rng, operation, context);
  const roll = rng();
  if (roll < 0.3) return base;
  if (roll < 0.48) return withOutsideGrammar(rng, base, operation.parameters);
  if (roll < 0.58) return withOddValue(rng, base, operation.parameters);
  if (roll < 0.68) return withWrongMethod(rng, base, context);
  if (roll < 0.8) return operation.body ? withBadBody(rng, base, context) : withUnwantedBody(rng, base);
  if (roll < 0.88) return withOddHeaders(rng, base);
  if (roll < 0.92) {
    const headers = { ...base.headers, 'x-pad': 'a'.repeat(17_000) };
    return { ...base, kind: 'headers too large', headers, expect: { outcomes: [{ status: 431, error: 'headers_too_large' }] }, fixed: ['x-pad'] };
  }
  return base;
}

/** One integer, number or flag parameter given a text outside its grammar: 400 `invalid_parameter`. */
function withOutsideGrammar(rng: Rng, request: FuzzRequest, parameters: Parameter[]): FuzzRequest {
  const typed = parameters.filter((p) => p.in === 'query' && ['integer', 'number', 'boolean'].includes(p.schema.type ?? ''));
  if (typed.length === 0) return withOddValue(rng, request, parameters);
  const parameter = pick(rng, typed);
  let text = pick(rng, parameter.schema.type === 'boolean' ? NOT_A_FLAG : NOT_A_NUMBER);
  if (parameter.schema.type === 'integer' && chance(rng, 0.15)) text = '1.5';
  const query = request.query.filter(([name]) => name !== parameter.name);
  query.push([parameter.name, text]);
  if (chance(rng, 0.1)) query.push([parameter.name, text === '' ? '1' : text]);
  const expect = { outcomes: [{ status: 400, error: 'invalid_parameter' }] };
  return { ...request, kind: `outside the grammar: ${parameter.name}`, query, expect, fixed: [parameter.name] };
}

/** Any parameter (or an unknown one) given an odd text: whatever the answer, it must be documented. */
function withOddValue(rng: Rng, request: FuzzRequest, parameters: Parameter[]): FuzzRequest {
  const parameter = parameters.length > 0 && chance(rng, 0.85) ? pick(rng, parameters) : { in: 'query', name: pick(rng, ['unknown', 'size', '__proto__', 'constructor', '%00']) };
  const text = pick(rng, ODD);
  const expect: Expectation = { outcomes: 'documented' };
  if (parameter.in === 'path') {
    // An empty segment or `..` would name another path than the operation's.
    return { ...request, kind: `odd path value: ${parameter.name}`, pathValues: { ...request.pathValues, [parameter.name]: text === '' ? '%20' : text }, expect };
  }
  return { ...request, kind: `odd query value: ${parameter.name}`, query: [...request.query.filter(([name]) => name !== parameter.name), [parameter.name, text]], expect };
}

/** The bodies a client sends a request with: none, its own, an empty JSON object, an empty chunked body, text. */
function clientBody(rng: Rng, request: FuzzRequest): Pick<FuzzRequest, 'headers' | 'body'> {
  const { authorization } = request.headers;
  const credentials: Record<string, string> = authorization === undefined ? {} : { authorization };
  switch (Math.floor(rng() * 5)) {
    case 0:
      return { headers: credentials };
    case 1:
      return request.body === undefined ? { headers: credentials } : { headers: request.headers, body: request.body };
    case 2:
      return { headers: { ...credentials, 'content-type': 'application/json' }, body: '{}' };
    case 3:
      return { headers: { ...credentials, 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, body: '' };
    default:
      return { headers: { ...credentials, 'content-type': 'text/plain' }, body: 'hello' };
  }
}

/** A method the path is not served with, with a body as clients send them: 405 with the path's `Allow`. */
function withWrongMethod(rng: Rng, request: FuzzRequest, context: FuzzContext): FuzzRequest {
  const served = new Set(Object.keys(context.doc.paths[request.path] ?? {}).map((m) => m.toUpperCase()));
  const method = pick(rng, METHODS.filter((m) => !served.has(m)));
  const { body: _body, ...rest } = request;
  const expect = { outcomes: [{ status: 405, error: 'method_not_allowed' }], allow: allowOf(context.doc, request.path) };
  return { ...rest, ...clientBody(rng, request), kind: 'wrong method', method, expect, fixed: ['body', 'content-type', 'transfer-encoding'] };
}

/** A body sent to an operation that takes none (HEAD and GET included): 413 `body_not_allowed`. */
function withUnwantedBody(rng: Rng, request: FuzzRequest): FuzzRequest {
  const headers = { ...request.headers, 'content-type': pick(rng, ['text/plain', 'application/json']) };
  const body = pick(rng, ['x', '{}', 'a'.repeat(3000)]);
  return { ...request, kind: 'body where none is taken', headers, body, expect: { outcomes: [{ status: 413, error: 'body_not_allowed' }] }, fixed: ['body', 'content-type'] };
}

/** Bodies a JSON route must refuse, with the code each gets: malformed (invalid_body), mistyped or out of bounds (invalid_parameter). */
const BAD_BODIES: Array<[string, string]> = [
  ['', 'invalid_body'],
  ['{', 'invalid_body'],
  ['{"__proto__":{"x":1}}', 'invalid_body'],
  ['{"servers":[{"address":"a"}]} x', 'invalid_body'],
  ['null', 'invalid_parameter'],
  ['[]', 'invalid_parameter'],
  ['"x"', 'invalid_parameter'],
  ['{"servers":[]}', 'invalid_parameter'],
  ['{"servers":{}}', 'invalid_parameter'],
  ['{"servers":[{"address":""}]}', 'invalid_parameter'],
  ['{"servers":[{"address":"a","queryPort":"80"}]}', 'invalid_parameter'],
  ['{"servers":[{"address":"a","bedrock":"true"}]}', 'invalid_parameter'],
  ['{"servers":[{"address":"a","extra":1}]}', 'invalid_parameter'],
  ['{"address":1,"webhook":{"kind":"json","url":"x"}}', 'invalid_parameter'],
  ['{"servers":[{"address":"a","queryPort":1e400}]}', 'invalid_parameter'],
  [`{"servers":[${Array.from({ length: 51 }, () => '{"address":"a"}').join(',')}]}`, 'invalid_parameter'],
];

function withBadBody(rng: Rng, request: FuzzRequest, context: FuzzContext): FuzzRequest {
  const roll = rng();
  const refused = (status: number, error: string) => ({ outcomes: [{ status, error }] });
  const fixed = ['body', 'content-type', 'transfer-encoding'];
  if (roll < 0.25) {
    // Just over HTTP_BODY_LIMIT_BYTES, valid JSON otherwise; sometimes in chunks, without a length.
    const start = '{"servers":[{"address":"';
    const end = '"}]}';
    const body = start + 'a'.repeat(context.bodyLimit + 1 - start.length - end.length) + end;
    const headers = chance(rng, 0.3) ? { ...request.headers, 'transfer-encoding': 'chunked' } : request.headers;
    return { ...request, kind: 'body just over the limit', headers, body, expect: refused(413, 'body_too_large'), fixed };
  }
  if (roll < 0.5) {
    const type = pick(rng, ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx', 'application/xml']);
    const body = pick(rng, [request.body ?? '', '']);
    return { ...request, kind: `media type ${type}`, headers: { ...request.headers, 'content-type': type }, body, expect: refused(415, 'unsupported_media_type'), fixed };
  }
  if (roll < 0.6) {
    const headers = { ...request.headers };
    delete headers['content-type'];
    const body = pick(rng, [request.body ?? '', '']);
    // Without a body there is no media type to refuse: an empty body, as with JSON.
    const expect = body === '' ? refused(400, 'invalid_body') : refused(415, 'unsupported_media_type');
    return { ...request, kind: 'body without a media type', headers, body, expect, fixed };
  }
  const [body, code] = pick(rng, BAD_BODIES);
  return { ...request, kind: 'bad JSON body', body, expect: refused(400, code), fixed };
}

/** Conditional and content-negotiation headers: the answer is the valid request's (a 304 where an image matches). */
function withOddHeaders(rng: Rng, request: FuzzRequest): FuzzRequest {
  const headers = {
    ...request.headers,
    'if-none-match': pick(rng, ['*', '"x"', 'W/"y"', '', '"' + 'z'.repeat(500) + '"']),
    accept: pick(rng, ['*/*', 'image/webp', 'text/html', 'application/xml', 'application/openmetrics-text']),
  };
  return { ...request, kind: 'odd headers', headers };
}

/** Smaller versions of a failing request: one query parameter, header or body part less, or a value halved. */
export function* smaller(request: FuzzRequest): Generator<FuzzRequest> {
  const fixed = new Set(request.fixed ?? []);
  for (let i = 0; i < request.query.length; i++) if (!fixed.has(request.query[i]![0])) yield { ...request, query: request.query.filter((_entry, j) => j !== i) };
  for (const name of Object.keys(request.headers)) {
    if (fixed.has(name)) continue;
    const headers = { ...request.headers };
    delete headers[name];
    yield { ...request, headers };
  }
  if (request.body !== undefined && !fixed.has('body')) {
    const { body, ...rest } = request;
    yield rest;
    if (body.length > 1) yield { ...request, body: body.slice(0, Math.ceil(body.length / 2)) };
  }
  for (let i = 0; i < request.query.length; i++) {
    const [name, value] = request.query[i]!;
    if (value !== null && value.length > 1 && !fixed.has(name)) yield { ...request, query: request.query.map((entry, j) => (j === i ? [name, value.slice(0, Math.ceil(value.length / 2))] : entry)) };
  }
  for (const [name, value] of Object.entries(request.pathValues)) {
    if (value.length > 1) yield { ...request, pathValues: { ...request.pathValues, [name]: value.slice(0, Math.ceil(value.length / 2)) } };
  }
}

/** Shrinks `request` while `fails` says a smaller one still fails (at most `budget` tries). */
export async function shrink(request: FuzzRequest, fails: (candidate: FuzzRequest) => Promise<boolean>, budget = 150): Promise<FuzzRequest> {
  let current = request;
  let tries = 0;
  let progress = true;
  while (progress && tries < budget) {
    progress = false;
    for (const candidate of smaller(current)) {
      if (++tries > budget) break;
      if (await fails(candidate)) {
        current = candidate;
        progress = true;
        break;
      }
    }
  }
  return current;
}
