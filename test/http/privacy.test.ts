/**
 * Privacy, end to end: the whole app (status, images, widget, history) on a real SQLite file
 * with a log file. Requests carry a distinctive client address (X-Forwarded-For with
 * TRUST_PROXY on) and user agent; afterwards neither appears in any byte of the database
 * files or the log.
 */
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { testConfig } from '../support/app.js';
import { startJavaServer } from '../support/minecraft.js';

const IP = '203.0.113.78';
const UA = 'PrivacyProbe/7.1 (observer-e2e; marker-a9c3e1)';
const dir = mkdtempSync(join(tmpdir(), 'observer-privacy-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function assertAbsent(label: string, bytes: Buffer) {
  for (const secret of [IP, UA, '203.0.113']) {
    for (const encoding of ['utf8', 'utf16le'] as const) {
      expect(bytes.includes(Buffer.from(secret, encoding)), `${secret} (${encoding}) in ${label}`).toBe(false);
    }
  }
}

describe('privacy', () => {
  it('keeps neither client IP nor user agent in the database or the log', async () => {
    const server = await startJavaServer({ motd: 'privacy', onlinePlayers: 2 });
    const db = join(dir, 'observer.db');
    const logPath = join(dir, 'observer.log');
    const log = createWriteStream(logPath);
    const { app, store } = await composeApp(testConfig({ DATABASE_URL: `sqlite:${db}`, TRUST_PROXY: 'true', LOG_LEVEL: 'trace', LOG_REQUESTS: 'true' }), {
      logger: { level: 'trace', stream: log },
    });
    try {
      const target = `127.0.0.1:${server.port}`;
      const headers = { 'x-forwarded-for': IP, 'user-agent': UA };
      const urls = [
        `/api/v1/status/${target}`,
        `/api/v1/status/${target}?legacy=true`,
        `/api/v1/status/missing.observer.test`,
        `/api/v1/status/not%20valid`,
        `/api/v1/icon/dynamic?address=${target}`,
        `/api/v1/icon/sharp?address=${target}`,
        `/api/v1/banner/${target}`,
        `/api/v1/banner/motd?motd=hello`,
        `/api/v1/widget/normal/${target}`,
        '/api/v1/trends',
        '/api/v1/stats',
        '/api/v1/status',
        '/nowhere',
      ];
      for (const url of urls) {
        const res = await app.inject({ url, headers });
        expect(res.statusCode, url).toBeLessThan(500);
      }
      await store.flush();
      // The look-up was counted (as a keyed hash) for the trend ranking.
      const trends = (await app.inject({ url: '/api/v1/trends' })).json();
      expect(trends.data[0]).toMatchObject({ hostname: '127.0.0.1', port: server.port });
      expect(trends.data[0].trend_score).toBeGreaterThanOrEqual(1);
    } finally {
      await app.close();
      await server.close();
      await new Promise<void>((resolve) => log.end(resolve));
    }
    const files = [db, `${db}-wal`, `${db}-shm`, logPath].filter((f) => existsSync(f));
    expect(files).toContain(logPath);
    expect(readFileSync(logPath, 'utf8')).toContain('request completed');
    for (const file of files) assertAbsent(file, readFileSync(file));
  });
});
