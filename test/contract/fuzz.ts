/**
 * Requests generated from the served OpenAPI document, as a fuzzer of the contract sends them
 * (fuzz.test.ts): for every operation, valid values and boundaries, values outside the
 * parameter grammar and odd encodings, wrong methods, wrong media types, bodies just over the
 * limit, and HEAD. A seeded PRNG makes a run repeatable; a failing request is shrunk to the
 * smallest one that still fails.
 */
import type { OpenApiDocument } from './document-check.js';

/** mulberry32: a small, fast, seeded PRNG, good enough to pick test cases. */
export function prng(seed: number): () => number {
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
  method: string;
  /** The operation's path template in the document. */
  path: string;
  /** Path parameter values, as sent (percent-encoded). */
  pathValues: Record<string, string>;
  /** Query parameters as sent (values percent-encoded); a null value is a bare `?name`. */
  query: Array<[string, string | null]>;
  headers: Record<string, string>;
  body?: string;
  /** What the answer must be beyond what the document allows, when the case decides it. */
  expect?: { status: number; error?: string; allow?: string };
  /** What the expectation rests on (query parameter or header names, `body`): kept whole while shrinking. */
  fixed?: string[];
  /** Sent by the one client that spends its rate limits (its answers may be 429 instead). */
  greedy?: boolean;
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
  return `[${request.kind}] curl -X ${request.method}${headers.join('')}${body} '${base}${url.length > 300 ? `${url.slice(0, 200)}…(${url.length} chars)` : url}'`;
}

interface Schema {
  type?: string;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  default?: unknown;
  examples?: unknown[];
}
interface Parameter {
  in: string;
  name: string;
  required?: boolean;
  schema: Schema;
  example?: unknown;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: unknown;
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

export interface FuzzContext {
  doc: OpenApiDocument;
  /** Addresses to look up: servers on loopback, names with and without DNS records, refused ones. */
  addresses: string[];
  /** The id and bearer token of a real watch. */
  watch: { id: string; token: string };
  /** A webhook URL that takes deliveries, on loopback. */
  webhookUrl: string;
  /** HTTP_BODY_LIMIT_BYTES of the instance. */
  bodyLimit: number;
}

type Rng = () => number;
const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;
const chance = (rng: Rng, p: number) => rng() < p;

/** The constant values a schema allows, if it is an enumeration. */
function constants(schema: Schema): string[] | null {
  if (schema.enum) return schema.enum.map(String);
  if (schema.const !== undefined) return [String(schema.const)];
  const options = schema.anyOf ?? schema.oneOf;
  if (options && options.every((option) => option.const !== undefined)) return options.map((option) => String(option.const));
  return null;
}

function randomHex(rng: Rng, digits: number): string {
  return Array.from({ length: digits }, () => '0123456789abcdefABCDEF'[Math.floor(rng() * 22)]).join('');
}

function uuid(rng: Rng): string {
  const h = () => randomHex(rng, 4).toLowerCase();
  return `${h()}${h()}-${h()}-4${h().slice(1)}-a${h().slice(1)}-${h()}${h()}${h()}`;
}

/** A valid value of the parameter, as sent; null: a bare flag. */
function validValue(rng: Rng, parameter: Parameter, context: FuzzContext): string | null {
  const { schema, name } = parameter;
  const listed = constants(schema);
  if (listed) return encodeURIComponent(pick(rng, listed));
  if (schema.type === 'boolean') return pick(rng, ['true', 'false', '1', '0', '', null]);
  if (schema.type === 'integer' || schema.type === 'number') {
    const min = schema.minimum ?? 0;
    const max = schema.maximum ?? Math.max(min + 1000, 1000);
    const value = pick(rng, [min, max, min + Math.floor(rng() * (max - min + 1))]);
    if (schema.type === 'number' && chance(rng, 0.3) && value < max) return String(value + Math.round(rng() * 99) / 100);
    return chance(rng, 0.1) ? `00${value}` : String(value);
  }
  if (schema.pattern?.includes('0-9a-fA-F')) return `${chance(rng, 0.5) ? '%23' : ''}${randomHex(rng, pick(rng, [3, 6]))}`;
  if (schema.format === 'uuid') return uuid(rng);
  if (name === 'address' || name === 'server') return encodeURIComponent(pick(rng, context.addresses));
  if (name === 'id') return pick(rng, [context.watch.id, uuid(rng)]);
  if (name === 'motd') return encodeURIComponent(pick(rng, ['§aHello §lworld', '&6Gold &ktext', 'plain', '§x§f§f§0§0§0§0hex\nline two']));
  const examples = [...(schema.examples ?? []), ...(parameter.example !== undefined ? [parameter.example] : []), ...(schema.default !== undefined ? [schema.default] : [])];
  if (examples.length > 0) return encodeURIComponent(String(pick(rng, examples)));
  return encodeURIComponent(Array.from({ length: 1 + Math.floor(rng() * 12) }, () => pick(rng, [...'abcxyz019-_'])).join(''));
}

/** Valid values for the path parameters and a random share of the query parameters. */
function validParameters(rng: Rng, parameters: Parameter[], context: FuzzContext) {
  const pathValues: Record<string, string> = {};
  const query: Array<[string, string | null]> = [];
  for (const parameter of parameters) {
    if (parameter.in === 'path') pathValues[parameter.name] = validValue(rng, parameter, context) ?? 'x';
    else if (parameter.in === 'query' && (parameter.required || chance(rng, 0.35))) query.push([parameter.name, validValue(rng, parameter, context)]);
  }
  return { pathValues, query };
}

/** A JSON body the operation takes: a bulk look-up, a watch or a test vote. */
function validBody(rng: Rng, path: string, context: FuzzContext): string {
  if (path === '/vote') return voteBody(rng);
  if (path === '/watches') {
    return JSON.stringify({
      address: pick(rng, context.addresses),
      ...(chance(rng, 0.5) ? { edition: pick(rng, ['java', 'bedrock']) } : {}),
      webhook: { kind: pick(rng, ['json', 'discord']), url: pick(rng, [context.webhookUrl, context.webhookUrl, 'http://127.0.0.1:9/hook', 'ftp://x', 'http://missing.observer.test/hook']) },
      ...(chance(rng, 0.3) ? { players_at_least: 1 + Math.floor(rng() * 100) } : {}),
    });
  }
  const entries = Array.from({ length: 1 + Math.floor(rng() * 4) }, () => ({
    address: pick(rng, context.addresses),
    ...(chance(rng, 0.2) ? { bedrock: chance(rng, 0.5) } : {}),
    ...(chance(rng, 0.1) ? { legacy: chance(rng, 0.5) } : {}),
    ...(chance(rng, 0.2) ? { edition: pick(rng, ['java', 'bedrock', 'auto']) } : {}),
    ...(chance(rng, 0.1) ? { query: true, queryPort: 1 + Math.floor(rng() * 65535) } : {}),
  }));
  return JSON.stringify({ servers: entries });
}

/** A test vote: most are answered at once (a key that is none, a refused or malformed target), some wait for the deadline (a closed port). */
function voteBody(rng: Rng): string {
  return JSON.stringify({
    host: pick(rng, ['127.0.0.1', 'mc.observer.test', 'missing.observer.test', '10.0.0.1', 'a..b', '::1', '127.0.0.1:8192']),
    ...(chance(rng, 0.7) ? { port: pick(rng, [1, 1023, 8192, 65535]) } : {}),
    username: pick(rng, ['Steve', 'a_b_1', 'x'.repeat(17), '']),
    ...(chance(rng, 0.3) ? { service: pick(rng, ['Observer', 'My List', 'bad\nline']) } : {}),
    ...pick<Record<string, string>>(rng, [{ public_key: 'not a key' }, { public_key: 'not a key' }, { token: 'fuzz-token' }, {}, { token: 't', public_key: 'k' }]),
  });
}

/** Bodies a JSON route must refuse: malformed, mistyped, out of bounds. */
const BAD_BODIES = [
  '', '{', 'null', '[]', '"x"', '{"servers":[]}', '{"servers":{}}', '{"servers":[{"address":""}]}', '{"servers":[{"address":"a","queryPort":"80"}]}',
  '{"servers":[{"address":"a","bedrock":"true"}]}', '{"servers":[{"address":"a","extra":1}]}', '{"address":1,"webhook":{"kind":"json","url":"x"}}',
  '{"servers":[{"address":"a","queryPort":1e400}]}', '{"__proto__":{"x":1}}', `{"servers":[${Array.from({ length: 51 }, () => '{"address":"a"}').join(',')}]}`,
];

/** The `Allow` of a path item: its methods (HEAD with GET), and OPTIONS. */
export function allowOf(doc: OpenApiDocument, path: string): string {
  const methods = new Set(Object.keys(doc.paths[path] ?? {}).map((method) => method.toUpperCase()));
  methods.add('OPTIONS');
  return METHOD_ORDER.filter((method) => methods.has(method)).join(', ');
}

/** One request for `operation` of the kind the PRNG picks. */
export function generate(rng: Rng, context: FuzzContext, operations: Array<{ method: string; path: string; operation: object }>): FuzzRequest {
  const { method, path, operation: described } = pick(rng, operations);
  const operation = described as Operation;
  const parameters = operation.parameters ?? [];
  const takesBody = operation.requestBody !== undefined;
  const { pathValues, query } = validParameters(rng, parameters, context);
  const base: FuzzRequest = { kind: 'valid', method, path, pathValues, query, headers: {} };
  if (takesBody) {
    base.headers['content-type'] = 'application/json';
    base.body = validBody(rng, path, context);
  }
  if (path.startsWith('/watches/') && chance(rng, 0.7)) base.headers.authorization = `Bearer ${pick(rng, [context.watch.token, 'nonsense', ''])}`;
  const roll = rng();
  if (roll < 0.3) return base;
  if (roll < 0.5) return withOutsideGrammar(rng, base, parameters);
  if (roll < 0.62) return withOddValue(rng, base, parameters);
  if (roll < 0.72) return withWrongMethod(rng, base, context);
  if (roll < 0.84) return takesBody ? withBadBody(rng, base, context) : { ...base, kind: 'body where none is taken', headers: { ...base.headers, 'content-type': 'text/plain' }, body: 'x', expect: { status: 413, error: 'body_not_allowed' }, fixed: ['body', 'content-type'] };
  if (roll < 0.92 && method === 'GET') return { ...base, kind: 'head', method: 'HEAD' };
  // Refused before its request is parsed, a HEAD's answer carries the JSON body (wire-errors.ts): asked as GET.
  if (roll < 0.95) return { ...base, kind: 'headers too large', method: method === 'HEAD' ? 'GET' : method, headers: { ...base.headers, 'x-pad': 'a'.repeat(17_000) }, expect: { status: 431, error: 'headers_too_large' }, fixed: ['x-pad'] };
  return { ...base, kind: 'odd headers', headers: { ...base.headers, 'if-none-match': pick(rng, ['*', '"x"', 'W/"y"', '', '"' + 'z'.repeat(500) + '"']), accept: pick(rng, ['*/*', 'image/webp', 'text/html', 'application/xml']) } };
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
  return { ...request, kind: `outside the grammar: ${parameter.name}`, query, expect: { status: 400, error: 'invalid_parameter' }, fixed: [parameter.name] };
}

/** Any parameter (or an unknown one) given an odd text: whatever the answer, it must be documented. */
function withOddValue(rng: Rng, request: FuzzRequest, parameters: Parameter[]): FuzzRequest {
  const parameter = parameters.length > 0 && chance(rng, 0.85) ? pick(rng, parameters) : { in: 'query', name: pick(rng, ['unknown', 'size', '__proto__', 'constructor', '%00']) };
  const text = pick(rng, ODD);
  if (parameter.in === 'path') {
    // An empty segment or `..` would name another path than the operation's.
    return { ...request, kind: `odd path value: ${parameter.name}`, pathValues: { ...request.pathValues, [parameter.name]: text === '' ? '%20' : text } };
  }
  return { ...request, kind: `odd query value: ${parameter.name}`, query: [...request.query.filter(([name]) => name !== parameter.name), [parameter.name, text]] };
}

function withWrongMethod(rng: Rng, request: FuzzRequest, context: FuzzContext): FuzzRequest {
  const served = new Set(Object.keys(context.doc.paths[request.path] ?? {}).map((m) => m.toUpperCase()));
  const wrong = METHODS.filter((method) => !served.has(method));
  const { body: _body, ...rest } = request;
  return { ...rest, kind: 'wrong method', method: pick(rng, wrong), headers: {}, expect: { status: 405, error: 'method_not_allowed', allow: allowOf(context.doc, request.path) } };
}

function withBadBody(rng: Rng, request: FuzzRequest, context: FuzzContext): FuzzRequest {
  const roll = rng();
  if (roll < 0.25) {
    // Just over HTTP_BODY_LIMIT_BYTES, valid JSON otherwise.
    const start = '{"servers":[{"address":"';
    const end = '"}]}';
    const body = start + 'a'.repeat(context.bodyLimit + 1 - start.length - end.length) + end;
    return { ...request, kind: 'body just over the limit', body, expect: { status: 413, error: 'body_too_large' }, fixed: ['body', 'content-type'] };
  }
  if (roll < 0.5) {
    const type = pick(rng, ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx', 'application/xml']);
    const body = pick(rng, [request.body ?? '', '']);
    return { ...request, kind: `media type ${type}`, headers: { ...request.headers, 'content-type': type }, body, expect: { status: 415, error: 'unsupported_media_type' }, fixed: ['body', 'content-type'] };
  }
  if (roll < 0.6) {
    const headers = { ...request.headers };
    delete headers['content-type'];
    return { ...request, kind: 'body without a media type', headers, expect: { status: 415, error: 'unsupported_media_type' }, fixed: ['body'] };
  }
  return { ...request, kind: 'bad JSON body', body: pick(rng, BAD_BODIES) };
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
