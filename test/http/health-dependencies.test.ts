/** Health's extra fields: Redis (and the database, where the store reports it) as they are. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { testConfig } from '../support/app.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { startOwnRedis, type OwnRedis } from '../support/redis-process.js';

let dir: string;
let own: OwnRedis;
let server: RunningJavaServer;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'observer-health-'));
  own = await startOwnRedis();
  server = await startJavaServer({ motd: 'health' });
});
afterAll(async () => {
  await server.close();
  await own.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function until(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  for (let i = 0; i < 200 && Date.now() < end; i += 1) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

describe('health with dependencies', () => {
  it('says redis is disabled without REDIS_URL', async () => {
    const { app } = await composeApp(testConfig({ DATABASE_URL: `sqlite:${join(dir, 'a.db')}` }), { logger: false, icmp: null });
    try {
      const body = (await app.inject({ method: 'GET', url: '/api/v1/status' })).json();
      expect(body).toMatchObject({ status: 'OK', redis: 'disabled', database: 'ok', write_buffer: expect.any(Number), write_buffer_dropped: 0 });
    } finally {
      await app.close();
    }
  });

  it('stays 200 and tells the truth while Redis is killed and after it returns', async () => {
    const { app } = await composeApp(testConfig({ DATABASE_URL: `sqlite:${join(dir, 'b.db')}`, REDIS_URL: own.url }), {
      logger: false,
      icmp: null,
    });
    const health = async () => app.inject({ method: 'GET', url: '/api/v1/status' });
    try {
      expect((await health()).json()).toMatchObject({ status: 'OK', redis: 'ok' });
      await own.kill();
      expect(await until(async () => (await health()).json().redis === 'down', 2_000)).toBe(true);
      const down = await health();
      expect(down.statusCode).toBe(200);
      expect(down.json().status).toBe('OK');
      // Status keeps answering from the local state.
      const status = await app.inject({ method: 'GET', url: `/api/v1/status/127.0.0.1:${server.port}` });
      expect(status.statusCode).toBe(200);
      expect(status.json().online).toBe(true);

      await own.start();
      expect(await until(async () => (await health()).json().redis === 'ok', 5_000)).toBe(true);
    } finally {
      await app.close();
    }
  });
});
