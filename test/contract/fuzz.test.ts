/**
 * A fuzz test of the contract: requests generated from the served OpenAPI document for every
 * operation (fuzz.ts), each with the answer it must get (fuzz-model.ts), sent to the built
 * service started as `npm start` starts it (fuzz-service.ts), with a real Java and Bedrock
 * server, names in the test DNS zone and a webhook receiver; every answer is checked
 * (fuzz-run.ts). FUZZ_SEED repeats a run (the seed is printed); FUZZ_REQUESTS sets its length
 * (`npm run fuzz` runs 50,000).
 *
 * The fuzz is tested too: with a fault planted in the service (planted-fault.mjs: a route that
 * answers 503 `store_unavailable`, or 400 to every request), a short run must fail, naming it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/ports.mjs';
import { startBedrockServer, startJavaServer, type RunningBedrockServer, type RunningJavaServer } from '../support/minecraft.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import type { OpenApiDocument } from './document-check.js';
import { generate, operationsOf, prng } from './fuzz.js';
import { fuzzTargets, type FuzzContext, type Mode } from './fuzz-model.js';
import { FuzzRun } from './fuzz-run.js';
import { startFuzzService, type FuzzService } from './fuzz-service.js';

const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 2000);
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
/** Watches a DELETE with their token may end. */
const DISPOSABLE_WATCHES = 30;

const work = mkdtempSync(join(tmpdir(), 'observer-fuzz-'));
let java: RunningJavaServer;
let bedrock: RunningBedrockServer;
let receiver: WebhookReceiver;
let closedPort: number;

beforeAll(async () => {
  java = await startJavaServer({ motd: '§afuzz §ltour', onlinePlayers: 2 });
  bedrock = await startBedrockServer({ port: java.port, motd: 'fuzz', playersOnline: 1 });
  receiver = await startWebhookReceiver();
  closedPort = await freePort();
}, 120_000);

afterAll(async () => {
  await java?.close();
  await bedrock?.close();
  await receiver?.close();
  rmSync(work, { recursive: true, force: true });
});

/** One setup request, from a client of its own (the run's clients keep their whole limits). */
async function setupRequest(service: FuzzService, client: number, path: string, init: RequestInit = {}) {
  const headers = { 'x-forwarded-for': `198.51.100.${client}`, ...(init.headers as Record<string, string> | undefined) };
  return fetch(`${service.origin}/api/v1${path}`, { ...init, headers });
}

async function createWatch(service: FuzzService, client: number): Promise<{ id: string; token: string }> {
  const res = await setupRequest(service, client, '/watches', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ address: `127.0.0.1:${java.port}`, webhook: { kind: 'json', url: receiver.url() } }),
  });
  expect(res.status, await res.clone().text()).toBe(201);
  const created = (await res.json()) as { id: string; management_token: string };
  return { id: created.id, token: created.management_token };
}

/** The flags that ask for `mode`, as a query string. */
const MODE_QUERY: Record<Exclude<Mode, 'auto'>, string> = { java: '', legacy: '?legacy=true', bedrock: '?bedrock=true' };

/**
 * Looks every name up in every mode it gives a status in, then asks each one's history: the
 * pairs with a history, which the run then expects (the others: 404).
 */
async function recordHistories(service: FuzzService, context: FuzzContext): Promise<void> {
  const pairs = context.targets.flatMap((target) =>
    (['java', 'legacy', 'bedrock'] as const).filter((mode) => target.result(mode) === 'status').map((mode) => ({ target, mode })),
  );
  await Promise.all(pairs.map(({ target, mode }) => setupRequest(service, 1, `/status/${encodeURIComponent(target.text)}${MODE_QUERY[mode]}`).then((res) => res.arrayBuffer())));
  for (const { target, mode } of pairs) {
    const res = await setupRequest(service, 2, `/history/${encodeURIComponent(target.text)}${MODE_QUERY[mode]}`);
    await res.arrayBuffer();
    if (res.status === 200) context.recorded.add(`${target.text}|${mode}`);
  }
}

/** The service, started as `npm start` would, with its watches and histories; what the run needs to know of it. */
async function fuzzedService(extra: { env?: Record<string, string>; preload?: string } = {}) {
  const service = await startFuzzService({
    dir: work,
    env: {
      PING_TIMEOUT_MS: String(PING_TIMEOUT_MS),
      HTTP_BODY_LIMIT_BYTES: String(BODY_LIMIT),
      // Per client and minute: the greedy client is past them within seconds, the others never.
      RATE_LIMIT_STATUS: '60',
      RATE_LIMIT_GENERAL: '60',
      RATE_LIMIT_MEDIA: '60',
      RATE_LIMIT_VOTE: '60',
      // A render slot for every request in flight: a render then waits on none, so its 503 would
      // come from event-loop lag alone, not from renders slowed by a busy machine (the render
      // queue has tests of its own).
      RENDER_CONCURRENCY: String(CONCURRENCY),
      TARGET_PINGS_PER_MINUTE: '100000',
      NEW_SERVERS_PER_CLIENT_PER_DAY: '1000000',
      ...extra.env,
    },
    ...(extra.preload ? { preload: extra.preload } : {}),
  });
  const doc = (await (await fetch(`${service.origin}/api/v1/openapi.json`)).json()) as OpenApiDocument;
  const disposable = [];
  // Three unverified watches per client at most (WATCHES_UNVERIFIED_PER_CLIENT).
  for (let i = 0; i < DISPOSABLE_WATCHES; i++) disposable.push(await createWatch(service, 10 + Math.floor(i / 3)));
  const context: FuzzContext = {
    doc,
    targets: fuzzTargets(java.port, closedPort),
    recorded: new Set(),
    watch: await createWatch(service, 3),
    disposable,
    disposed: 0,
    webhooks: [
      { url: receiver.url() },
      { url: receiver.url('/other') },
      // A loopback port below 1024: WEBHOOK_ALLOWLIST admits it whatever its port.
      { url: 'http://127.0.0.1:9/hook' },
      { url: 'ftp://x', refusal: 'invalid_webhook' },
      { url: 'http://localhost:8080/hook', refusal: 'webhook_refused' },
      { url: 'http://missing.observer.test/hook', refusal: 'webhook_not_found' },
    ],
    bodyLimit: BODY_LIMIT,
  };
  await recordHistories(service, context);
  return { service, doc, context };
}

/** A run against `fuzzed`, its report, the service stopped (its output added to a failing report). */
async function fuzz(fuzzed: Awaited<ReturnType<typeof fuzzedService>>, seed: number, requests: number): Promise<string[]> {
  const { service, doc, context } = fuzzed;
  try {
    const shedBefore = await service.shed();
    const run = new FuzzRun(doc, context, {
      origin: service.origin,
      seed,
      requests,
      concurrency: CONCURRENCY,
      deadlineMs: DEADLINE_MS,
      announcements: async () => ({ shed: (await service.shed()) - shedBefore, storeFailures: service.storeFailures() }),
      log: (line) => console.log(line),
    });
    return await run.run();
  } finally {
    await service.stop();
  }
}

describe('the contract, fuzzed against the service as npm start runs it', () => {
  it(
    `answers ${REQUESTS} generated requests as the document says`,
    async () => {
      expect(await fuzz(await fuzzedService(), SEED, REQUESTS)).toEqual([]);
    },
    // A budget, not an assertion on speed: a long run (npm run fuzz) takes minutes.
    180_000 + REQUESTS * 100,
  );
});

describe('the fuzz itself', () => {
  const preload = fileURLToPath(new URL('./planted-fault.mjs', import.meta.url));

  it.each([
    ['store-unavailable:/api/v1/stats', /(GET|HEAD) \/stats: .*503/],
    ['refuse-valid:/api/v1/trends', /(GET|HEAD) \/trends 400: .*where 200 was expected/],
  ])('fails a run against a service with a planted fault (%s), naming the operation', async (fault, named) => {
    const report = await fuzz(await fuzzedService({ env: { FUZZ_PLANTED_FAULT: fault }, preload }), 20260101, 500);
    expect(report.join('\n')).toMatch(named);
  }, 180_000);

  it('generates a body that takes exactly one of several fields (oneOf of required sets) with one of them, and every required field', () => {
    const body = {
      type: 'object',
      required: ['host', 'username'],
      properties: { host: { type: 'string' }, username: { type: 'string', examples: ['Steve'] }, port: { type: 'integer', minimum: 1, maximum: 65535 }, token: { type: 'string' }, public_key: { type: 'string' } },
      oneOf: [{ required: ['token'] }, { required: ['public_key'] }],
      additionalProperties: false,
    };
    const doc = {
      servers: [],
      components: { schemas: {} },
      paths: { '/vote': { post: { operationId: 'sendVote', responses: {}, requestBody: { content: { 'application/json': { schema: body } } } } } },
    } as unknown as OpenApiDocument;
    const context: FuzzContext = { doc, targets: fuzzTargets(25565, 1), recorded: new Set(), watch: { id: 'x', token: 'y' }, disposable: [], disposed: 0, webhooks: [], bodyLimit: 4096 };
    const rng = prng(7);
    const valid = Array.from({ length: 400 }, () => generate(rng, context, operationsOf(doc))).filter((request) => request.kind === 'valid');
    expect(valid.length).toBeGreaterThan(50);
    const shapes = new Set<string>();
    for (const request of valid) {
      const sent = JSON.parse(request.body!) as Record<string, unknown>;
      expect(Object.keys(sent)).toEqual(expect.arrayContaining(['host', 'username']));
      expect(['token' in sent, 'public_key' in sent].filter(Boolean)).toHaveLength(1);
      shapes.add('token' in sent ? 'token' : 'public_key');
    }
    expect([...shapes].sort()).toEqual(['public_key', 'token']);
  });
});
