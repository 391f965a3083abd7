/**
 * One webhook attempt against hostile receivers on loopback: a redirect is not followed, a
 * receiver that never answers costs the deadline, an endless answer is read only so far.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { postWebhook, RESPONSE_BYTES_READ } from '../../src/watch/webhook.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function serve(handler: Parameters<typeof createServer>[1]): Promise<URL> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
}

const post = (url: URL, timeoutMs = 2_000) => postWebhook({ url, ip: '127.0.0.1' }, '{"event":"test"}', {}, timeoutMs);

describe('a webhook attempt', () => {
  it('does not follow a redirect', async () => {
    let followed = 0;
    const target = await serve((_req, res) => {
      followed += 1;
      res.end();
    });
    const url = await serve((_req, res) => {
      res.writeHead(302, { location: target.href });
      res.end();
    });
    expect(await post(url)).toEqual({ statusCode: 302, error: 'redirect not followed' });
    expect(followed).toBe(0);
  });

  it('gives up at its deadline when the receiver never answers', async () => {
    const url = await serve(() => {
      // Holds the request open.
    });
    expect(await post(url, 500)).toEqual({ statusCode: null, error: 'timed out' });
  });

  it('reads a few KiB of an endless answer and closes the connection', async () => {
    let written = 0;
    let closed = false;
    const url = await serve((_req, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(1024, 'x');
      const pump = () => {
        while (!closed && written < 64 * 1024 * 1024 && res.write(chunk)) written += chunk.length;
        if (!closed && written < 64 * 1024 * 1024) res.once('drain', pump);
      };
      res.on('close', () => (closed = true));
      pump();
    });
    expect(await post(url)).toEqual({ statusCode: 200, error: null });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(closed).toBe(true);
    expect(written).toBeLessThan(8 * 1024 * 1024);
    expect(RESPONSE_BYTES_READ).toBe(4096);
  });

  it('connects to the checked IP whatever the URL names', async () => {
    const url = await serve((_req, res) => res.end());
    const named = new URL(url.href.replace('127.0.0.1', 'unresolvable.invalid'));
    expect(await postWebhook({ url: named, ip: '127.0.0.1' }, '{}', {}, 2_000)).toEqual({ statusCode: 200, error: null });
  });
});
