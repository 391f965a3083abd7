/**
 * A scripted tour of every route of the document over real HTTP: each success and each error
 * a route documents that a test can bring about on loopback, every answer checked against the
 * served document (document-check.ts). Each request is its own client (X-Forwarded-For, with
 * TRUST_PROXY) unless a step shares one to spend a limit.
 */
import { request } from 'node:http';
import type { DocumentCheck, Answer } from './document-check.js';

export interface Step {
  method?: 'GET' | 'HEAD' | 'POST' | 'DELETE';
  /** The operation's path template in the document, e.g. `/status/{address}`. */
  path: string;
  /** The request's path below the API prefix, query included. */
  url: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** The status expected, and the error code when it is an error. */
  status: number;
  error?: string;
  /** The client it is charged to (X-Forwarded-For); default: a new one. */
  client?: string;
  /** Sent without a Host header (a malformed HTTP/1.1 request). */
  noHost?: boolean;
}

/** One instance the tour talks to: its origin and API prefix. */
export interface Instance {
  origin: string;
  prefix: string;
}

let clients = 0;
/** A client address of its own (198.18.0.0/15, benchmarking: only ever a header value, never a destination). */
export function newClient(): string {
  clients += 1;
  return `198.18.${Math.floor(clients / 250)}.${(clients % 250) + 1}`;
}

/** Sends one request over a new connection; the raw answer. */
export function send(instance: Instance, step: Step): Promise<Answer> {
  const body = step.body === undefined ? undefined : Buffer.from(step.body);
  const headers: Record<string, string> = { 'x-forwarded-for': step.client ?? newClient(), connection: 'close', ...step.headers };
  if (body) headers['content-length'] = String(body.length);
  return new Promise((resolve, reject) => {
    const req = request(`${instance.origin}${instance.prefix}${step.url}`, { method: step.method ?? 'GET', headers, setHost: !step.noHost }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const answerHeaders = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (value !== undefined) answerHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
        }
        resolve({ status: res.statusCode ?? 0, headers: answerHeaders, body: Buffer.concat(chunks) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** What a tour has seen: problems, and which statuses of which operations it brought about. */
export class TourLog {
  readonly problems: string[] = [];
  readonly covered = new Set<string>();
  /** The `error` codes of the error answers seen. */
  readonly codes = new Set<string>();

  constructor(private readonly check: DocumentCheck) {}

  /** The document's operations (DocumentCheck.operations). */
  operations(broken: string) {
    return this.check.operations(broken);
  }

  /** Sends `step` to `instance`, checks the answer; the answer. */
  async run(instance: Instance, step: Step): Promise<Answer> {
    const answer = await send(instance, step);
    const method = step.method ?? 'GET';
    const what = `${method} ${step.url}`;
    this.covered.add(`${method} ${step.path} ${answer.status}`);
    this.problems.push(...this.check.problems(method, step.path, answer));
    if (answer.status !== step.status) this.problems.push(`${what}: ${answer.status} where ${step.status} was expected: ${answer.body.toString('utf8').slice(0, 200)}`);
    const code = answer.status >= 400 && answer.headers.get('content-type')?.includes('json') ? (JSON.parse(answer.body.toString('utf8')) as { error?: string }).error : undefined;
    if (code !== undefined) this.codes.add(code);
    if (step.error !== undefined && code !== step.error) this.problems.push(`${what}: error ${String(code)} where ${step.error} was expected`);
    return answer;
  }

  /** Sends `step` with one client until it is refused with 429 (at most `limit` + 1 times). */
  async untilLimited(instance: Instance, step: Omit<Step, 'status' | 'client'>, limit: number): Promise<void> {
    const client = newClient();
    for (let i = 0; i < limit; i++) {
      const answer = await send(instance, { ...step, status: 0, client });
      if (answer.status === 429) break;
    }
    await this.run(instance, { ...step, client, status: 429, error: 'rate_limited' });
  }
}
