/**
 * The front's list of the Fastify hooks it stands in for (src/http/front-hooks.ts): the hooks
 * the application adds are known to it, and a request hook it does not know is named, so that
 * the front stays off rather than skip it.
 */
import Fastify from 'fastify';
import { expect, it } from 'vitest';
import { registerCors } from '../../src/http/cors.js';
import { FrontHooks } from '../../src/http/front-hooks.js';
import { registerBodyRefusal } from '../../src/http/limits.js';
import { registerRequestRecording } from '../../src/http/request-record.js';

it('knows the hooks the application adds, names any other request hook, and ignores child contexts and later probes', async () => {
  const app = Fastify();
  const hooks = new FrontHooks();
  hooks.watch(app);
  registerCors(app);
  registerBodyRefusal(app);
  registerRequestRecording(app, () => undefined);
  app.addHook('onReady', (done) => done());
  expect(hooks.unknown()).toEqual([]);

  app.addHook('onSend', async function addServerTiming(_request, _reply, payload) {
    return payload;
  });
  await app.register(async (child) => {
    child.addHook('onRequest', async function onlyForItsRoutes() {});
  });
  // A context watched as the API's is: its hooks count.
  await app.register(async (context) => {
    hooks.watch(context);
    context.addHook('preHandler', async () => undefined);
  });
  await app.ready();
  expect(hooks.unknown()).toEqual(['onSend:addServerTiming', 'preHandler:anonymous']);

  hooks.seal();
  const later = Fastify();
  hooks.watch(later);
  later.addHook('onRequest', async function probe() {});
  expect(hooks.unknown()).toEqual(['onSend:addServerTiming', 'preHandler:anonymous']);
  await app.close();
});
