/**
 * A fuzz test of the contract: requests generated from the served OpenAPI document for every
 * operation (fuzz.ts) go to an instance listening on loopback, with a real Java and Bedrock
 * server, names in the test DNS zone and a webhook receiver; every answer must be what the
 * document says (status documented for the operation, body valid with ajv in strict mode,
 * documented headers: document-check.ts), carry `Access-Control-Allow-Origin`, be no 5xx, and
 * come within the look-up deadline. A wrong method must be a 405 with the path's `Allow`.
 *
 * One 5xx is an answer rather than a fault: a documented 503 that sheds load or stands for a
 * slow database (`overloaded`, `service_busy`, `store_unavailable`, with `Retry-After`), which a
 * machine busy with other work can bring about (a history read past its 1 s deadline). Those
 * are counted, and more than a few of them fail the run.
 *
 * Requests come from 2,000 clients within their rate limits, and a tenth from one
 * client past them, whose answers may be a 429 instead of the one the case expects.
 *
 * FUZZ_SEED repeats a run (the seed is printed); FUZZ_REQUESTS sets its length (`npm run fuzz`
 * runs a long one). A failing request is shrunk to the smallest that still fails.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { freePort } from '../../scripts/ports.mjs';
import { testConfig } from '../support/app.js';
import { startBedrockServer, startJavaServer, type RunningBedrockServer, type RunningJavaServer } from '../support/minecraft.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { DocumentCheck, type Answer, type OpenApiDocument } from './document-check.js';
import { describeRequest, generate, prng, shrink, urlOf, type FuzzContext, type FuzzRequest } from './fuzz.js';

const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 3000);
const SEED = process.env.FUZZ_SEED === undefined ? Math.floor(Math.random() * 2 ** 32) : Number(process.env.FUZZ_SEED);
/** Requests in flight at once. */
const CONCURRENCY = 6;
const PING_TIMEOUT_MS = 2000;
const BODY_LIMIT = 4096;
/**
 * The look-up deadline of one request: its whole ping budget, and a margin for a busy machine
 * (renders, the database, other tests); an answer later than that is one that waited on
 * something with no deadline.
 */
const DEADLINE_MS = PING_TIMEOUT_MS + 8000;

const work = mkdtempSync(join(tmpdir(), 'observer-fuzz-'));
let composed: Awaited<ReturnType<typeof composeApp>>;
let java: RunningJavaServer;
let bedrock: RunningBedrockServer;
let receiver: WebhookReceiver;
let origin: string;
let doc: OpenApiDocument;
let check: DocumentCheck;
let context: FuzzContext;
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });

beforeAll(async () => {
  java = await startJavaServer({ motd: '§afuzz §ltour', onlinePlayers: 2 });
  bedrock = await startBedrockServer({ port: java.port, motd: 'fuzz', playersOnline: 1 });
  receiver = await startWebhookReceiver();
  const unlimited = '1000000';
  // Per client and minute: the greedy client is past them within seconds, the others never.
  const limit = '60';
  const config = testConfig({
    DATABASE_URL: `sqlite:${join(work, 'observer.db')}`,
    TRUST_PROXY: 'true',
    PING_TIMEOUT_MS: String(PING_TIMEOUT_MS),
    HTTP_BODY_LIMIT_BYTES: String(BODY_LIMIT),
    RATE_LIMIT_STATUS: limit,
    RATE_LIMIT_GENERAL: limit,
    RATE_LIMIT_MEDIA: limit,
    TARGET_PINGS_PER_MINUTE: '100000',
    // A render slot for every request in flight: the fuzzer's own load is not shed (503
    // `overloaded` is the answer to load, test/http/admission.test.ts), so any 5xx is a fault.
    RENDER_CONCURRENCY: String(CONCURRENCY * 2),
    NEW_SERVERS_PER_CLIENT_PER_DAY: unlimited,
  });
  composed = await composeApp(config, { logger: false, icmp: null });
  await composed.app.listen({ host: '127.0.0.1', port: 0 });
  origin = `http://127.0.0.1:${(composed.app.server.address() as AddressInfo).port}`;
  doc = (await (await fetch(`${origin}/api/v1/openapi.json`)).json()) as OpenApiDocument;
  check = new DocumentCheck(doc);
  const created = await send({
    kind: 'setup',
    method: 'POST',
    path: '/watches',
    pathValues: {},
    query: [],
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ address: `127.0.0.1:${java.port}`, webhook: { kind: 'json', url: receiver.url() } }),
  });
  const watch = JSON.parse(created.body.toString('utf8')) as { id: string; management_token: string };
  context = {
    doc,
    addresses: [
      `127.0.0.1:${java.port}`,
      `127.0.0.1:${java.port}`,
      `127.0.0.1:${await freePort()}`,
      '[::1]:1',
      'missing.observer.test',
      'srv.observer.test',
      '10.0.0.1',
      'demo',
      'a..b',
      'Example.COM.',
    ],
    watch: { id: watch.id, token: watch.management_token },
    webhookUrl: receiver.url(),
    bodyLimit: BODY_LIMIT,
  };
}, 120_000);

afterAll(async () => {
  agent.destroy();
  await composed?.app.close();
  await java?.close();
  await bedrock?.close();
  await receiver?.close();
  rmSync(work, { recursive: true, force: true });
});

/** Answers by status, printed at the end: what the run reached. */
const statuses = new Map<number, number>();
/** The 503s that answer load, not a fault (see the top of this file). */
const LOAD_CODES = new Set(['overloaded', 'service_busy', 'store_unavailable']);
let shed = 0;
/** Share of the answers that may be load's 503s before the run fails. */
const SHED_SHARE_MAX = 0.05;
let clients = 0;
/** Sends one request (as one of 2,000 clients, or the greedy one: X-Forwarded-For); the raw answer. */
function send(request: FuzzRequest): Promise<Answer> {
  const body = request.body === undefined ? undefined : Buffer.from(request.body);
  clients = (clients + 1) % 2000;
  const client = request.greedy ? '198.19.0.1' : `198.18.${clients >> 8}.${(clients & 255) + 1}`;
  const headers: Record<string, string> = { 'x-forwarded-for': client, ...request.headers };
  if (body) headers['content-length'] = String(body.length);
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${origin}/api/v1${urlOf(request)}`, { method: request.method, headers, agent }, (res) => {
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
    req.setTimeout(DEADLINE_MS * 3, () => req.destroy(new Error(`no answer within ${DEADLINE_MS * 3} ms`)));
    req.on('error', reject);
    req.end(body);
  });
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

/** What is wrong with the answer to `request`; empty when nothing is. */
async function problemsOf(request: FuzzRequest): Promise<string[]> {
  const started = performance.now();
  let answer: Answer;
  try {
    answer = await send(request);
  } catch (error) {
    return [`no answer: ${(error as Error).message}`];
  }
  const ms = Math.round(performance.now() - started);
  statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
  const where = `${request.method} ${request.path} ${answer.status}`;
  const problems: string[] = [];
  if (ms > DEADLINE_MS) problems.push(`${where}: answered after ${ms} ms, past the deadline of ${DEADLINE_MS} ms`);
  const code = errorCodeOf(answer);
  // A HEAD answer has no body to carry the code; its GET's 503s are checked the same way.
  const loadAnswer = answer.status === 503 && answer.headers.has('retry-after') && (request.method === 'HEAD' || LOAD_CODES.has(code ?? ''));
  if (loadAnswer) shed += 1;
  else if (answer.status >= 500) problems.push(`${where}: a 5xx: ${answer.body.toString('utf8').slice(0, 200)}`);
  if (answer.headers.get('access-control-allow-origin') !== '*') problems.push(`${where}: no Access-Control-Allow-Origin: *`);
  const { expect: expected } = request;
  const limited = request.greedy === true && answer.status === 429;
  if (expected && !limited) {
    if (answer.status !== expected.status || (expected.error !== undefined && request.method !== 'HEAD' && code !== expected.error)) {
      problems.push(`${where}: ${answer.status} ${String(code)} where ${expected.status} ${expected.error ?? ''} was expected: ${answer.body.toString('utf8').slice(0, 200)}`);
    }
    if (expected.allow !== undefined && answer.headers.get('allow') !== expected.allow) problems.push(`${where}: Allow ${String(answer.headers.get('allow'))} where ${expected.allow} was expected`);
  }
  const documented = doc.paths[request.path]?.[request.method.toLowerCase()] !== undefined;
  if (documented) problems.push(...check.problems(request.method, request.path, answer));
  else if (answer.status !== 405 && !limited) problems.push(`${where}: to a method the document does not list, where 405 was expected`);
  else if (request.method !== 'HEAD') problems.push(...check.errorBodyProblems(where, answer.body));
  return problems;
}

describe('the contract, fuzzed', () => {
  it(
    `answers ${REQUESTS} generated requests as the document says`,
    async () => {
      console.log(`fuzz: seed ${SEED} (FUZZ_SEED=${SEED} repeats this run), ${REQUESTS} requests`);
      const rng = prng(SEED);
      const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
        Object.entries(item).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
      );
      const requests: FuzzRequest[] = Array.from({ length: REQUESTS }, () => ({ ...generate(rng, context, operations), greedy: rng() < 0.1 }));
      const failures: Array<{ request: FuzzRequest; problems: string[] }> = [];
      let next = 0;
      const worker = async () => {
        while (next < requests.length && failures.length === 0) {
          const request = requests[next++]!;
          const problems = await problemsOf(request);
          if (problems.length > 0) failures.push({ request, problems });
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      console.log(`fuzz: answers by status: ${[...statuses].sort(([a], [b]) => a - b).map(([status, count]) => `${status} ×${count}`).join(', ')}`);
      expect(shed, `503s answering load (overloaded, service_busy, store_unavailable) of ${REQUESTS} answers`).toBeLessThanOrEqual(REQUESTS * SHED_SHARE_MAX);
      const failure = failures[0];
      if (failure === undefined) return;
      const smallest = await shrink(failure.request, async (candidate) => (await problemsOf(candidate)).length > 0);
      const report = [
        `seed ${SEED} (FUZZ_SEED=${SEED}), request ${requests.indexOf(failure.request) + 1} of ${REQUESTS}`,
        `failing: ${describeRequest(failure.request, `${origin}/api/v1`)}`,
        ...failure.problems,
        `shrunk: ${describeRequest(smallest, `${origin}/api/v1`)}`,
        ...(await problemsOf(smallest)),
      ];
      if (smallest.method === 'HEAD') {
        // A HEAD answer has no body to say why: the GET's says it.
        const answer = await send({ ...smallest, method: 'GET' });
        report.push(`the same as GET: ${answer.status} ${answer.body.toString('utf8').slice(0, 300)}`);
      }
      expect(report).toEqual([]);
    },
    // A budget, not an assertion on speed: a long run (npm run fuzz) takes minutes.
    120_000 + REQUESTS * 100,
  );
});
