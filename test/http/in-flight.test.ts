/**
 * Requests in flight (src/http/in-flight.ts) over real sockets: a request counts from its
 * arrival until its response closes, whether it was answered or the client went away.
 */
import { createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, it } from 'vitest';
import { RequestsInFlight } from '../../src/http/in-flight.js';

it('counts a request until its response is answered or cut short', async () => {
  const inFlight = new RequestsInFlight();
  const held = new Map<string, ServerResponse>();
  const server = createServer((req, res) => {
    inFlight.track(res);
    held.set(req.url ?? '', res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    const answered = new Promise<number>((resolve) => request({ port, host: '127.0.0.1', path: '/a' }, (res) => resolve(res.statusCode ?? 0)).end());
    const abandoned = request({ port, host: '127.0.0.1', path: '/b' });
    abandoned.on('error', () => undefined);
    abandoned.end();
    await expect.poll(() => inFlight.active).toBe(2);

    held.get('/a')!.end('done');
    expect(await answered).toBe(200);
    await expect.poll(() => inFlight.active).toBe(1);
    abandoned.destroy();
    await expect.poll(() => inFlight.active).toBe(0);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
