/**
 * A fuzz run (fuzz.test.ts): generated requests (fuzz.ts) sent to a running instance by
 * Node's own client, as 2,000 clients within their rate limits and one past them, and every
 * answer checked:
 *  - what the request must get (fuzz-model.ts), its error code among those the document lists
 *    for that status of the operation, a bulk look-up's entries one by one;
 *  - the document (status, media type, body schema, headers: document-check.ts), CORS, no
 *    5xx, an answer within the look-up deadline, an image's bytes by their magic numbers;
 *  - a 503 only where it is an answer, not a fault: documented for the operation, with
 *    `Retry-After`, for a cause the instance announced (shedding: its `observer_shed_total`;
 *    a history read that failed: its log), and at most a small share of each operation's
 *    answers (never a pool across the run, which one broken operation could fill).
 * A failing request is shrunk to the smallest that still fails.
 */
import { Agent, request as httpRequest } from 'node:http';
import { DocumentCheck, type Answer, type OpenApiDocument } from './document-check.js';
import { describeRequest, generate, operationsOf, prng, shrink, urlOf, type FuzzRequest, type Operation } from './fuzz.js';
import { bodyRefusal, bulkEntries, validOutcomes, type Expectation, type FuzzContext, type Outcome } from './fuzz-model.js';

/** What the instance said of itself during the run: the causes of a 503 it announced. */
export interface Announcements {
  /** Renders and pings refused with 503 `overloaded` (the growth of `observer_shed_total`). */
  shed: number;
  /** When history reads failed (the store's log lines), in epoch milliseconds. */
  storeFailures: number[];
}

export interface RunOptions {
  origin: string;
  seed: number;
  requests: number;
  /** Requests in flight at once. */
  concurrency: number;
  /** Longest an answer may take. */
  deadlineMs: number;
  /** Read once the requests are answered. */
  announcements: () => Promise<Announcements>;
  log: (line: string) => void;
}

/** Share of an operation's answers that may be announced 503s. */
const SHED_SHARE_MAX = 0.05;
/** How long after a failed history read its 503s may come: the pause of reads, their deadline, and a margin. */
const STORE_FAILURE_WINDOW_MS = 5_000;
const API_PREFIX = '/api/v1';

/** Magic numbers of the binary and text media types an operation answers with. */
const MAGIC: Record<string, (body: Buffer) => boolean> = {
  'image/png': (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  'image/webp': (b) => b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP',
  'image/svg+xml': (b) => b.toString('utf8', 0, 200).trimStart().startsWith('<svg'),
  'font/woff2': (b) => b.toString('latin1', 0, 4) === 'wOF2',
  'text/html': (b) => /^<!doctype html>/i.test(b.toString('utf8', 0, 15)),
  'text/plain': (b) => b.toString('utf8', 0, 7) === '# HELP ',
  'application/openmetrics-text': (b) => b.toString('utf8').endsWith('# EOF\n'),
};

/** The codes each error status of each operation may carry, read from the document's descriptions (src/http/contract.ts writes them). */
function documentedCodes(doc: OpenApiDocument): Map<string, Set<string>> {
  const known = new Set(((doc.components.schemas.ApiErrorCode as { anyOf?: Array<{ const: string }> }).anyOf ?? []).map((option) => option.const));
  const codes = new Map<string, Set<string>>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        const description = (response as { description?: string }).description ?? '';
        const listed = [...description.matchAll(/(?:^`error`: |; )`([a-z_]+)` \(/g)].map((match) => match[1]!).filter((code) => known.has(code));
        if (listed.length > 0) codes.set(`${method.toUpperCase()} ${path} ${status}`, new Set(listed));
      }
    }
  }
  return codes;
}

/** A 503 met during the run, judged once the run is over. */
interface Unavailable {
  operation: string;
  code: string | undefined;
  at: number;
  request: FuzzRequest;
}

export class FuzzRun {
  private readonly check: DocumentCheck;
  private readonly codes: Map<string, Set<string>>;
  /** The document's operations by operationId. */
  private readonly operations: Map<string, Operation>;
  private readonly agent: Agent;
  private clients = 0;
  readonly statuses = new Map<number, number>();
  /** Answers by operation, and the 503s among them. */
  private readonly answered = new Map<string, number>();
  private readonly unavailable: Unavailable[] = [];
  /** 503 `overloaded` answers and bulk entries. */
  private overloaded = 0;
  /** How the expectations were decided: by the case, by the model, or `documented` only. */
  private readonly judged = { case: 0, model: 0, documented: 0 };

  constructor(
    private readonly doc: OpenApiDocument,
    private readonly context: FuzzContext,
    private readonly options: RunOptions,
  ) {
    this.check = new DocumentCheck(doc);
    this.codes = documentedCodes(doc);
    this.operations = new Map(operationsOf(doc).map((operation) => [operation.operationId, operation]));
    this.agent = new Agent({ keepAlive: true, maxSockets: options.concurrency });
  }

  /** Runs the requests; the report of what failed, empty when nothing did. */
  async run(): Promise<string[]> {
    const { seed, requests: count, concurrency, log } = this.options;
    log(`fuzz: seed ${seed} (FUZZ_SEED=${seed} repeats this run), ${count} requests`);
    const rng = prng(seed);
    const operations = [...this.operations.values()];
    const requests = Array.from({ length: count }, () => ({ ...generate(rng, this.context, operations), greedy: rng() < 0.1 }));
    const failures: Array<{ request: FuzzRequest; problems: string[] }> = [];
    let next = 0;
    const worker = async () => {
      while (next < requests.length && failures.length === 0) {
        const request = requests[next++]!;
        const problems = await this.problemsOf(request);
        if (problems.length > 0) failures.push({ request, problems });
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    log(`fuzz: answers by status: ${[...this.statuses].sort(([a], [b]) => a - b).map(([status, n]) => `${status} ×${n}`).join(', ')}`);
    const { case: byCase, model, documented } = this.judged;
    log(`fuzz: expected answers decided by the case ${byCase}, by the request's values ${model}; only documented ${documented}`);
    const report = failures.length > 0 ? await this.failureReport(failures[0]!, requests) : await this.unavailableProblems();
    this.agent.destroy();
    return report;
  }

  private async failureReport(failure: { request: FuzzRequest; problems: string[] }, requests: FuzzRequest[]): Promise<string[]> {
    const base = `${this.options.origin}${API_PREFIX}`;
    const smallest = await shrink(failure.request, async (candidate) => (await this.problemsOf(candidate)).length > 0);
    const report = [
      `seed ${this.options.seed} (FUZZ_SEED=${this.options.seed}), request ${requests.indexOf(failure.request) + 1} of ${requests.length}`,
      `failing: ${describeRequest(failure.request, base)}`,
      ...failure.problems,
      `shrunk: ${describeRequest(smallest, base)}`,
      ...(await this.problemsOf(smallest)),
    ];
    if (smallest.method === 'HEAD') {
      // A HEAD answer has no body to say why: the GET's says it.
      const answer = await this.send({ ...smallest, method: 'GET' });
      report.push(`the same as GET: ${answer.status} ${answer.body.toString('utf8').slice(0, 300)}`);
    }
    return report;
  }

  /** Sends one request (as one of 2,000 clients, or the greedy one: X-Forwarded-For); the raw answer. */
  send(request: FuzzRequest): Promise<Answer> {
    const body = request.body === undefined ? undefined : Buffer.from(request.body);
    this.clients = (this.clients + 1) % 2000;
    const client = request.greedy ? '198.19.0.1' : `198.18.${this.clients >> 8}.${(this.clients & 255) + 1}`;
    const headers: Record<string, string> = { 'x-forwarded-for': client, ...request.headers };
    if (body && headers['transfer-encoding'] === undefined) headers['content-length'] = String(body.length);
    const limit = this.options.deadlineMs * 3;
    return new Promise((resolve, reject) => {
      const req = httpRequest(`${this.options.origin}${API_PREFIX}${urlOf(request)}`, { method: request.method, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const answerHeaders = new Headers();
          for (const [name, value] of Object.entries(res.headers)) if (value !== undefined) answerHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
          resolve({ status: res.statusCode ?? 0, headers: answerHeaders, body: Buffer.concat(chunks) });
        });
        res.on('error', reject);
      });
      // Far past the deadline: a request that never ends is reported, not waited on for ever.
      req.setTimeout(limit, () => req.destroy(new Error(`no answer within ${limit} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  /** What is wrong with the answer to `request`; empty when nothing is (503s are judged at the end). */
  async problemsOf(request: FuzzRequest): Promise<string[]> {
    const started = performance.now();
    let answer: Answer;
    try {
      answer = await this.send(request);
    } catch (error) {
      return [`${request.method} ${request.path}: no answer: ${(error as Error).message}`];
    }
    const ms = Math.round(performance.now() - started);
    this.statuses.set(answer.status, (this.statuses.get(answer.status) ?? 0) + 1);
    const operation = `${request.method} ${request.path}`;
    this.answered.set(operation, (this.answered.get(operation) ?? 0) + 1);
    const where = `${operation} ${answer.status}`;
    const problems: string[] = [];
    if (ms > this.options.deadlineMs) problems.push(`${where}: answered after ${ms} ms, past the deadline of ${this.options.deadlineMs} ms`);
    if (answer.headers.get('access-control-allow-origin') !== '*') problems.push(`${where}: no Access-Control-Allow-Origin: *`);
    const code = request.method === 'HEAD' ? undefined : errorCodeOf(answer);
    if (answer.status === 503 && answer.headers.has('retry-after')) {
      this.unavailable.push({ operation, code, at: Date.now(), request });
      if (code === 'overloaded') this.overloaded += 1;
    } else if (answer.status >= 500) {
      problems.push(`${where}: a 5xx: ${answer.body.toString('utf8').slice(0, 200)}`);
    } else if (!(request.greedy && answer.status === 429 && code !== 'target_rate_limited')) {
      problems.push(...this.expectationProblems(where, request, answer, code));
    }
    problems.push(...this.documentProblems(where, request, answer, code));
    return problems;
  }

  /** Whether the answer is one the request must get. */
  private expectationProblems(where: string, request: FuzzRequest, answer: Answer, code: string | undefined): string[] {
    const expected = this.expectationOf(request);
    const problems: string[] = [];
    const { outcomes } = expected;
    this.judged[outcomes === 'documented' ? 'documented' : request.expect === 'model' ? 'model' : 'case'] += 1;
    const matches = (o: Outcome) => o.status === answer.status && (o.error === undefined || request.method === 'HEAD' || o.error === code);
    if (outcomes === 'documented') {
      if (answer.status >= 500 || answer.status === 429) problems.push(`${where}: ${answer.status} ${String(code)} where a 2xx or a 4xx was expected`);
    } else if (!outcomes.some(matches)) {
      const wanted = outcomes.map((o) => `${o.status} ${o.error ?? ''}`.trim()).join(' or ');
      problems.push(`${where}: ${answer.status} ${String(code)} where ${wanted} was expected: ${answer.body.toString('utf8').slice(0, 200)}`);
    }
    if (expected.allow !== undefined && answer.headers.get('allow') !== expected.allow) {
      problems.push(`${where}: Allow ${String(answer.headers.get('allow'))} where ${expected.allow} was expected`);
    }
    if (expected.entries && answer.status === 200 && request.method !== 'HEAD') problems.push(...this.entryProblems(where, expected.entries, answer));
    return problems;
  }

  /** The request's expectation: its case's, or what the model makes of its values. */
  private expectationOf(request: FuzzRequest): Expectation {
    if (request.expect !== 'model') return request.expect;
    // A request shrunk to less than its body or media type meets the refusals of a body first.
    const takesBody = this.operations.get(request.operationId)?.body !== null;
    const refused = takesBody ? bodyRefusal(request.headers['content-type'], request.body) : null;
    if (refused) return { outcomes: [refused] };
    const body = takesBody ? (JSON.parse(request.body!) as unknown) : undefined;
    const values = {
      path: Object.fromEntries(Object.entries(request.pathValues).map(([name, value]) => [name, decode(value)])),
      query: new Map(request.query.map(([name, value]) => [name, value === null ? null : decode(value)])),
      headers: request.headers,
      body,
    };
    const outcomes = validOutcomes(request.operationId, values, this.context);
    const entries = request.path === '/status/bulk' ? bulkEntries(values.body, this.context) : null;
    return entries ? { outcomes, entries } : { outcomes };
  }

  /** Each entry of a bulk answer: a status or an error code its entry may get (`overloaded` when shedding). */
  private entryProblems(where: string, entries: string[][], answer: Answer): string[] {
    const results = (JSON.parse(answer.body.toString('utf8')) as { results: Array<{ error?: string }> }).results;
    const problems: string[] = [];
    results.forEach((result, i) => {
      // An entry that could not be looked up has a `message`; an offline status has an `error` too.
      const kind = 'message' in result ? String(result.error) : 'status';
      if (kind === 'overloaded') this.overloaded += 1;
      else if (!entries[i]?.includes(kind)) problems.push(`${where}: entry ${i} is ${kind} where ${entries[i]?.join(' or ')} was expected`);
    });
    return problems;
  }

  /** The answer against the document: status, body, headers, the error code for the status, an image's bytes. */
  private documentProblems(where: string, request: FuzzRequest, answer: Answer, code: string | undefined): string[] {
    const documented = this.doc.paths[request.path]?.[request.method.toLowerCase()] !== undefined;
    if (!documented) {
      if (answer.status !== 405 && !(request.greedy && answer.status === 429)) return [`${where}: to a method the document does not list, where 405 was expected`];
      return request.method === 'HEAD' ? [] : this.check.errorBodyProblems(where, answer.body);
    }
    const problems = this.check.problems(request.method, request.path, answer);
    const listed = this.codes.get(`${request.method} ${request.path} ${answer.status}`);
    if (code !== undefined && listed && !listed.has(code)) problems.push(`${where}: error ${code} is not among those the document lists for ${answer.status}: ${[...listed].join(', ')}`);
    const type = (answer.headers.get('content-type') ?? '').split(';', 1)[0]!.trim();
    const magic = MAGIC[type];
    if (answer.status === 200 && request.method !== 'HEAD' && magic && !magic(answer.body)) problems.push(`${where}: a ${type} body that is not one (${answer.body.subarray(0, 16).toString('hex')})`);
    return problems;
  }

  /** The 503s of the run: each for a cause the instance announced, and a small share of its operation's answers. */
  private async unavailableProblems(): Promise<string[]> {
    const announced = await this.options.announcements();
    const problems: string[] = [];
    if (this.overloaded > announced.shed) problems.push(`${this.overloaded} answers were 503 overloaded, but the instance shed ${announced.shed} renders and pings`);
    const byOperation = new Map<string, number>();
    for (const { operation, code, at, request } of this.unavailable) {
      byOperation.set(operation, (byOperation.get(operation) ?? 0) + 1);
      const storeDown = announced.storeFailures.some((failed) => failed <= at && at - failed <= STORE_FAILURE_WINDOW_MS);
      const cause = code === undefined ? (announced.shed > 0 || storeDown) : code === 'overloaded' || (code === 'store_unavailable' && storeDown);
      if (!cause) problems.push(`${operation}: 503 ${code ?? '(HEAD)'} for no cause the instance announced: ${describeRequest(request, '')}`);
    }
    for (const [operation, count] of byOperation) {
      const allowed = Math.max(1, Math.floor(SHED_SHARE_MAX * (this.answered.get(operation) ?? 0)));
      if (count > allowed) problems.push(`${operation}: ${count} of its ${this.answered.get(operation)} answers were 503s (at most ${allowed})`);
    }
    this.options.log(`fuzz: 503s by operation: ${[...byOperation].map(([op, n]) => `${op} ×${n}`).join(', ') || 'none'}; shed ${announced.shed}, history reads failed ${announced.storeFailures.length}`);
    return problems;
  }
}

function decode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** The `error` of a JSON error body, if the answer is one. */
function errorCodeOf(answer: Answer): string | undefined {
  if (!(answer.headers.get('content-type') ?? '').startsWith('application/json')) return undefined;
  try {
    return (JSON.parse(answer.body.toString('utf8')) as { error?: string }).error;
  } catch {
    return undefined;
  }
}
