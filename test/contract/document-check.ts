/**
 * Checks real answers against the served OpenAPI document, as a client author's validator
 * would: the status must be documented for the operation, the media type listed for that
 * status, a JSON body valid against its schema (ajv in strict mode, draft 2020-12), every
 * declared header valid and every required one present, and none of the API's own headers
 * sent where the document does not declare it.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

interface MediaType {
  schema?: Record<string, unknown>;
}
interface HeaderObject {
  schema: Record<string, unknown>;
  required?: boolean;
}
interface ResponseObject {
  headers?: Record<string, HeaderObject>;
  content?: Record<string, MediaType>;
}
interface OperationObject {
  operationId: string;
  parameters?: Array<{ in: string; name: string; example?: unknown }>;
  requestBody?: unknown;
  responses: Record<string, ResponseObject>;
}
export interface OpenApiDocument {
  servers: Array<{ url: string }>;
  paths: Record<string, Record<string, OperationObject>>;
  components: { schemas: Record<string, unknown> };
}

/** The API's own headers: sent only where the document declares them. */
const API_HEADERS = ['x-cache', 'cache-control', 'etag', 'ratelimit-policy', 'ratelimit', 'retry-after', 'x-render-cache', 'www-authenticate'];

/** One answer as it came off the wire. */
export interface Answer {
  status: number;
  headers: Headers;
  body: Buffer;
}

export class DocumentCheck {
  private readonly ajv: Ajv2020;
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(private readonly doc: OpenApiDocument) {
    // Strict: an unknown keyword or format in the document is an error, not ignored. OpenAPI's
    // own annotation `example` is declared as a keyword.
    this.ajv = new Ajv2020({ strict: true, allErrors: true });
    (addFormats as unknown as (ajv: Ajv2020) => void)(this.ajv);
    this.ajv.addKeyword({ keyword: 'example' });
    // The document's `#/components/schemas/<Name>` references, as `$defs` of one schema.
    this.ajv.addSchema({ $id: 'observer', $defs: rewriteRefs(doc.components.schemas) as Record<string, unknown> });
  }

  /** The operation at `path` (a template of the document, e.g. `/status/{address}`). */
  operation(method: string, path: string) {
    const operation = this.doc.paths[path]?.[method.toLowerCase()];
    if (!operation) throw new Error(`${method} ${path} is not in the document`);
    return operation;
  }

  /**
   * Every operation, with a URL whose path parameters are the document's examples, and, for an
   * operation with path parameters, that URL with the last one replaced by `broken`.
   */
  operations(broken: string): Array<{ method: 'GET' | 'HEAD' | 'POST' | 'DELETE'; path: string; url: string; brokenUrl: string | null; takesBody: boolean }> {
    return Object.entries(this.doc.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, operation]) => {
        const example = (name: string) => {
          const value = operation.parameters?.find((p) => p.in === 'path' && p.name === name)?.example;
          if (typeof value !== 'string') throw new Error(`${method} ${path}: path parameter ${name} has no example`);
          return encodeURIComponent(value);
        };
        const url = path.replace(/\{(\w+)\}/g, (_match, name: string) => example(name));
        const last = path.lastIndexOf('{');
        const brokenUrl = last < 0 ? null : path.slice(0, last).replace(/\{(\w+)\}/g, (_match, name: string) => example(name)) + broken + path.slice(path.indexOf('}', last) + 1);
        return { method: method.toUpperCase() as 'GET' | 'HEAD' | 'POST' | 'DELETE', path, url, brokenUrl, takesBody: operation.requestBody !== undefined };
      }),
    );
  }

  /** Problems of `answer` to `method path`; empty when it is what the document says. */
  problems(method: string, path: string, answer: Answer): string[] {
    const where = `${method} ${path} ${answer.status}`;
    const response = this.operation(method, path).responses[String(answer.status)];
    if (!response) return [`${where}: status not documented`];
    return [...this.bodyProblems(where, response, answer), ...this.headerProblems(where, response, answer.headers)];
  }

  /** Problems of a body that must be an `ErrorResponse` (an answer to a method the document has no operation for). */
  errorBodyProblems(where: string, body: Buffer): string[] {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      return [`${where}: body is not JSON`];
    }
    return this.schemaProblems(`${where} body`, { $ref: '#/components/schemas/ErrorResponse' }, parsed);
  }

  private bodyProblems(where: string, response: ResponseObject, answer: Answer): string[] {
    const declared = Object.keys(response.content ?? {});
    if (declared.length === 0) return answer.body.length === 0 ? [] : [`${where}: a body where none is documented`];
    const mediaType = (answer.headers.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase();
    if (!declared.includes(mediaType)) return [`${where}: content-type ${mediaType || '(none)'} not documented (${declared.join(', ')})`];
    if (mediaType !== 'application/json') return answer.body.length > 0 ? [] : [`${where}: empty ${mediaType} body`];
    let body: unknown;
    try {
      body = JSON.parse(answer.body.toString('utf8'));
    } catch {
      return [`${where}: body is not JSON`];
    }
    return this.schemaProblems(`${where} body`, response.content![mediaType]!.schema ?? {}, body);
  }

  private headerProblems(where: string, response: ResponseObject, headers: Headers): string[] {
    const problems: string[] = [];
    const declared = Object.fromEntries(Object.entries(response.headers ?? {}).map(([name, header]) => [name.toLowerCase(), header]));
    for (const [name, header] of Object.entries(declared)) {
      const value = headers.get(name);
      if (value === null) {
        if (header.required) problems.push(`${where}: required header ${name} missing`);
        continue;
      }
      problems.push(...this.schemaProblems(`${where} header ${name}`, header.schema, headerValue(value, header.schema)));
    }
    for (const name of API_HEADERS) {
      if (headers.has(name) && !declared[name]) problems.push(`${where}: header ${name} sent but not documented`);
    }
    return problems;
  }

  private schemaProblems(where: string, schema: Record<string, unknown>, value: unknown): string[] {
    const key = JSON.stringify(schema);
    let validate = this.compiled.get(key);
    if (!validate) {
      validate = this.ajv.compile(rewriteRefs(schema) as Record<string, unknown>);
      this.compiled.set(key, validate);
    }
    if (validate(value)) return [];
    return (validate.errors ?? []).map((e) => `${where}: ${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
  }
}

/** A header's text as the value its schema describes (OpenAPI's `simple` style: an integer is its digits). */
function headerValue(value: string, schema: Record<string, unknown>): unknown {
  return schema.type === 'integer' && /^-?\d+$/.test(value) ? Number(value) : value;
}

function rewriteRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    out[key] = key === '$ref' && typeof value === 'string' ? value.replace('#/components/schemas/', 'observer#/$defs/') : rewriteRefs(value);
  }
  return out;
}
