/**
 * The request steps (src/http/request-steps.ts) are one list for both entrances: a step added to
 * the application runs for the requests the front answers (plain status and health, before
 * Fastify) and for those Fastify's routes answer, with the same view of the request, and its
 * headers are on every answer. A step that refuses a request has it answered in the one error
 * shape, by either entrance. Real HTTP throughout: app.inject() never reaches the front.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { ObserverError } from '../../src/core/errors.js';
import { buildApp } from '../../src/http/app.js';
import type { RequestStep, StepRequest } from '../../src/http/request-steps.js';
import { createStatusService } from '../../src/status/index.js';
import { testConfig } from '../support/app.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';

let java: RunningJavaServer;
const closers: Array<() => Promise<void>> = [];
beforeAll(async () => {
  java = await startJavaServer({ motd: 'steps' });
});
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});
afterAll(async () => {
  await java.close();
});

/** The app with `step` after its own, on a real socket; `routed` lists what Fastify answered. */
async function start(step: RequestStep) {
  const config = testConfig();
  const status = createStatusService({ config, clock: systemClock, icmp: null });
  const app = await buildApp({ config, logger: false, status, requestSteps: [step] });
  const routed: string[] = [];
  // A probe of the entrance, not a step: it sees only what Fastify answers, refusals included.
  app.addHook('onResponse', async (request) => {
    routed.push(request.url);
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  closers.push(() => app.close());
  return { origin: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, routed };
}

it('runs a step added to the application for every request, whichever entrance answers it', async () => {
  const seen: Array<{ before: StepRequest } | { after: StepRequest; statusCode: number }> = [];
  const { origin, routed } = await start({
    name: 'test step',
    headers: { 'x-test-step': 'yes' },
    before: (request) => void seen.push({ before: request }),
    after: (request, statusCode) => void seen.push({ after: request, statusCode }),
  });
  const target = `127.0.0.1:${java.port}`;
  const urls = [`/api/v1/status/${target}`, `/api/v1/status/${target}?legacy=false`, '/api/v1/status', '/api/v1/status/', '/api/v1/stats', '/nowhere'];
  const answers = [];
  for (const url of urls) {
    const res = await fetch(`${origin}${url}`);
    await res.arrayBuffer();
    answers.push({ status: res.status, step: res.headers.get('x-test-step'), cors: res.headers.get('access-control-allow-origin') });
  }
  // The front answered the plain status request and health; Fastify the others.
  await expect.poll(() => routed).toEqual([`/api/v1/status/${target}?legacy=false`, '/api/v1/status/', '/api/v1/stats', '/nowhere']);
  expect(answers).toEqual(
    [200, 200, 200, 200, 404, 404].map((status) => ({ status, step: 'yes', cors: '*' })),
  );
  // The recorder runs after each answer: once every `after` is in, each request was seen twice.
  await expect.poll(() => seen.length).toBe(2 * urls.length);
  const routes = ['/api/v1/status/:address', '/api/v1/status/:address', '/api/v1/status', expect.stringMatching(/^\/api\/v1\/status\/?$/), null, null];
  for (const [i, url] of urls.entries()) {
    const path = url.split('?')[0];
    const expected = { method: 'GET', path, route: routes[i], takesBody: false };
    expect(seen[2 * i]).toEqual({ before: expect.objectContaining(expected) });
    expect(seen[2 * i + 1]).toEqual({ after: expect.objectContaining(expected), statusCode: answers[i]!.status });
  }
});

it('answers a request a step refuses in the one error shape, on either entrance, and records it', async () => {
  const recorded: Array<[string, number]> = [];
  const { origin, routed } = await start({
    name: 'refuse marked requests',
    before: (request) => (request.headers['x-refuse'] === undefined ? undefined : new ObserverError('refused_by_step', 403, 'Refused by a step.')),
    after: (request, statusCode) => void recorded.push([request.path, statusCode]),
  });
  const target = `127.0.0.1:${java.port}`;
  for (const url of [`/api/v1/status/${target}`, '/api/v1/status', `/api/v1/status/${target}?legacy=false`]) {
    const res = await fetch(`${origin}${url}`, { headers: { 'x-refuse': '1' } });
    expect(res.status).toBe(403);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(await res.json()).toEqual({ status: 'error', error: 'refused_by_step', message: 'Refused by a step.' });
  }
  // The front hands a refused request to Fastify, which answers it.
  await expect.poll(() => routed).toEqual([`/api/v1/status/${target}`, '/api/v1/status', `/api/v1/status/${target}?legacy=false`]);
  await expect.poll(() => recorded.length).toBe(3);
  expect(recorded).toEqual([
    [`/api/v1/status/${target}`, 403],
    ['/api/v1/status', 403],
    [`/api/v1/status/${target}`, 403],
  ]);
  // Unmarked, the same requests are answered (the front takes the plain ones again).
  routed.length = 0;
  expect((await fetch(`${origin}/api/v1/status/${target}`)).status).toBe(200);
  expect((await fetch(`${origin}/api/v1/status`)).status).toBe(200);
  expect(routed).toEqual([]);
});
