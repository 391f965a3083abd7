/**
 * One webhook attempt against hostile receivers on loopback: a redirect is not followed, a
 * receiver that never answers costs the deadline, an endless answer is read only so far; what
 * an attempt reports is delivered, refused or failed, never why a connection failed. And the
 * webhooks' guard: its own allowlist, and system ports refused on public addresses.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AddressGuard, TargetResolver } from '../../src/resolve/index.js';
import { postWebhook, resolveWebhook, RESPONSE_BYTES_READ } from '../../src/watch/webhook.js';
import { freePort } from '../../scripts/ports.mjs';

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
    expect(await post(url)).toEqual({ result: 'refused', statusCode: 302 });
    expect(followed).toBe(0);
  });

  it('gives up at its deadline when the receiver never answers', async () => {
    const url = await serve(() => {
      // Holds the request open.
    });
    expect(await post(url, 500)).toEqual({ result: 'failed', statusCode: null });
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
    expect(await post(url)).toEqual({ result: 'delivered', statusCode: 200 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(closed).toBe(true);
    expect(written).toBeLessThan(8 * 1024 * 1024);
    expect(RESPONSE_BYTES_READ).toBe(4096);
  });

  it('connects to the checked IP whatever the URL names', async () => {
    const url = await serve((_req, res) => res.end());
    const named = new URL(url.href.replace('127.0.0.1', 'unresolvable.invalid'));
    expect(await postWebhook({ url: named, ip: '127.0.0.1' }, '{}', {}, 2_000)).toEqual({ result: 'delivered', statusCode: 200 });
  });

  it('says `failed` alike for a closed port and a silent one: no port-scan oracle', async () => {
    const closed = new URL(`http://127.0.0.1:${await freePort()}/hook`);
    const silent = await serve(() => {});
    expect(await post(closed, 500)).toEqual({ result: 'failed', statusCode: null });
    expect(await post(silent, 500)).toEqual({ result: 'failed', statusCode: null });
  });

  it('is cut off by the stop signal', async () => {
    const url = await serve(() => {});
    const stop = new AbortController();
    const attempt = postWebhook({ url, ip: '127.0.0.1' }, '{}', {}, 60_000, stop.signal);
    setTimeout(() => stop.abort(), 100);
    expect(await attempt).toEqual({ result: 'failed', statusCode: null });
  });
});

describe('the webhooks\' guard', () => {
  const resolverOf = (guard: AddressGuard) => new TargetResolver({ dnsServers: ['127.0.0.1:5353'], guard });
  const resolve = (url: string, guard: AddressGuard) => resolveWebhook(new URL(url), resolverOf(guard), guard, AbortSignal.timeout(5_000));

  it('refuses a public address on a system port, allows web and unprivileged ports (nothing connects)', async () => {
    const guard = new AddressGuard([]);
    for (const url of ['http://1.1.1.1:22/', 'http://1.1.1.1:25/', 'https://1.1.1.1:1023/', 'http://[2606:4700::1111]:6/']) {
      await expect(resolve(url, guard), url).rejects.toMatchObject({ code: 'webhook_refused', statusCode: 400 });
    }
    for (const url of ['http://1.1.1.1/', 'https://1.1.1.1/', 'http://1.1.1.1:8080/', 'https://1.1.1.1:65535/']) {
      await expect(resolve(url, guard), url).resolves.toMatchObject({ ip: '1.1.1.1' });
    }
  });

  it('lets WEBHOOK_ALLOWLIST open an address, on any port', async () => {
    const guard = new AddressGuard(['127.0.0.0/8']);
    await expect(resolve('http://127.0.0.1:22/', guard)).resolves.toMatchObject({ ip: '127.0.0.1' });
    await expect(resolve('http://mc.observer.test:6379/', guard)).resolves.toMatchObject({ ip: '127.0.0.1' });
    await expect(resolve('http://[::1]:8080/', guard)).rejects.toMatchObject({ code: 'webhook_refused' });
  });
});
