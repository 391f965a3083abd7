/**
 * Image and widget look-ups count as clients for the trends, with the same privacy rules as
 * the status route: a keyed hash of the client, never its address.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { testConfig } from '../support/app.js';
import { startJavaServer } from '../support/minecraft.js';

const dir = mkdtempSync(join(tmpdir(), 'observer-media-clients-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('image and widget look-ups', () => {
  it('count each distinct client once in the trend score, and store no address', async () => {
    const server = await startJavaServer({ motd: 'counted', onlinePlayers: 0 });
    const db = join(dir, 'observer.db');
    const { app, store, status } = await composeApp(testConfig({ DATABASE_URL: `sqlite:${db}`, TRUST_PROXY: 'true' }), { logger: false, icmp: null });
    const target = `127.0.0.1:${server.port}`;
    const clients = ['198.51.100.11', '198.51.100.12', '198.51.100.13'];
    try {
      const urls = [`/api/v1/icon/dynamic?address=${target}`, `/api/v1/banner/${target}`, `/api/v1/widget/normal/${target}`];
      for (const [i, url] of urls.entries()) {
        // Each client twice: a client counts once.
        for (let n = 0; n < 2; n++) {
          const res = await app.inject({ url, headers: { 'x-forwarded-for': clients[i]! } });
          expect(res.statusCode, url).toBe(200);
        }
      }
      await status.recorded();
      await store.flush();
      const trends = (await app.inject({ url: '/api/v1/trends' })).json();
      expect(trends.data[0]).toMatchObject({ hostname: '127.0.0.1', port: server.port });
      // distinct_clients_24h + players / (players + 1000) with 0 players online.
      expect(trends.data[0].trend_score).toBe(3);
    } finally {
      await app.close();
      await server.close();
    }
    for (const file of [db, `${db}-wal`].filter((f) => existsSync(f))) {
      for (const ip of clients) expect(readFileSync(file).includes(Buffer.from(ip))).toBe(false);
    }
  });
});

describe('look-ups and /trends', () => {
  it('list a server in /trends as soon as it was looked up, its check still queued', async () => {
    const servers = await Promise.all([1, 2, 3].map((n) => startJavaServer({ motd: `queued ${n}`, onlinePlayers: n })));
    const db = join(dir, 'queued.db');
    // A write window longer than the test: the checks stay queued unless a read writes them.
    const { app } = await composeApp(testConfig({ DATABASE_URL: `sqlite:${db}` }), {
      logger: false,
      icmp: null,
      writes: { windowMs: 60_000 },
    });
    try {
      // Over real sockets, as a client asks, each request right after the last answer: whether
      // the last server is new may still be being read when /trends arrives.
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      for (const server of servers) {
        expect((await fetch(`${base}/api/v1/status/127.0.0.1:${server.port}`)).status).toBe(200);
      }
      const trends = await fetch(`${base}/api/v1/trends`);
      expect(trends.headers.get('cache-control')).toBe('public, max-age=30');
      const body = (await trends.json()) as { data: Array<{ port: number }> };
      expect(body.data.map((s) => s.port)).toEqual([...servers].reverse().map((s) => s.port));
    } finally {
      await app.close();
      await Promise.all(servers.map((s) => s.close()));
    }
  });
});
