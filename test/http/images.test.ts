import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { createStatusService } from '../../src/status/index.js';
import { systemClock } from '../../src/core/clock.js';
import { testConfig } from '../support/app.js';
import { freePort } from '../../scripts/ports.mjs';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';

async function appWith(env: Record<string, string> = {}) {
  const config = testConfig(env);
  const app = await buildApp({ config, status: createStatusService({ config, clock: systemClock, icmp: null }), logger: false });
  await app.ready();
  return app;
}

/** A 16x16 favicon: 4x4 blocks alternating red and blue, pixel art to enlarge crisply. */
async function checkerFavicon(): Promise<string> {
  const raw = Buffer.alloc(16 * 16 * 4);
  for (let y = 0; y < 16; y++)
    for (let x = 0; x < 16; x++) {
      const red = (Math.floor(x / 4) + Math.floor(y / 4)) % 2 === 0;
      raw.set(red ? [255, 0, 0, 255] : [0, 0, 255, 255], (y * 16 + x) * 4);
    }
  const png = await sharp(raw, { raw: { width: 16, height: 16, channels: 4 } }).png().toBuffer();
  return `data:image/png;base64,${png.toString('base64')}`;
}

async function pixels(body: Buffer) {
  const { data, info } = await sharp(body).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const at = (x: number, y: number) => Array.from(data.subarray((y * info.width + x) * 4, (y * info.width + x) * 4 + 4));
  return { info, data, at };
}

let app: Awaited<ReturnType<typeof appWith>>;
let server: RunningJavaServer;
let target: string;
beforeAll(async () => {
  app = await appWith({ RATE_LIMIT_MEDIA: '100000' });
  server = await startJavaServer({ motd: '§6Gold §nunder', onlinePlayers: 42, maxPlayers: 100, favicon: await checkerFavicon() });
  target = `127.0.0.1:${server.port}`;
});
afterAll(async () => {
  await app.close();
  await server.close();
});
const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers });

describe('/api/v1/icon/dynamic', () => {
  it("serves the server's favicon at the default 80 px, cached 1 day / 7 days", async () => {
    const res = await get(`/api/v1/icon/dynamic?address=${target}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('image/png');
    expect(res.headers['cache-control']).toBe('public, max-age=86400, s-maxage=604800');
    const { info, at } = await pixels(res.rawPayload);
    expect(info.format).toBe('raw');
    expect([info.width, info.height]).toEqual([80, 80]);
    expect(at(2, 2)).toEqual([255, 0, 0, 255]);
  });

  it('enlarges with nearest-neighbour: only the two colours of the pixel art, in sharp blocks', async () => {
    const res = await get(`/api/v1/icon/dynamic?server=${target}&size=256`);
    const { info, data, at } = await pixels(res.rawPayload);
    expect(info.width).toBe(256);
    const colours = new Set<string>();
    for (let i = 0; i < data.length; i += 4) colours.add(data.subarray(i, i + 4).join(','));
    expect([...colours].sort()).toEqual(['0,0,255,255', '255,0,0,255']);
    // A block edge falls exactly between pixel 63 and 64 (16 px → 256 px: 4 → 64).
    expect(at(63, 10)).toEqual([255, 0, 0, 255]);
    expect(at(64, 10)).toEqual([0, 0, 255, 255]);
  });

  it('serves WebP on request', async () => {
    const res = await get(`/api/v1/icon/dynamic?address=${target}&format=webp&size=16`);
    expect(res.headers['content-type']).toBe('image/webp');
    const meta = await sharp(res.rawPayload).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['webp', 16, 16]);
  });

  it("gives Observer's default icon to offline and unknown servers", async () => {
    const offline = await get(`/api/v1/icon/dynamic?address=127.0.0.1:${await freePort()}`);
    const unknown = await get('/api/v1/icon/dynamic?address=missing.observer.test');
    const online = await get(`/api/v1/icon/dynamic?address=${target}`);
    expect(offline.statusCode).toBe(200);
    expect(unknown.statusCode).toBe(200);
    expect(offline.rawPayload.equals(unknown.rawPayload)).toBe(true);
    expect(offline.rawPayload.equals(online.rawPayload)).toBe(false);
    expect((await sharp(offline.rawPayload).metadata()).width).toBe(80);
  });

  it('caches the default icon standing in for an offline or unknown server only as long as that status', async () => {
    for (const address of [`127.0.0.1:${await freePort()}`, 'missing.observer.test']) {
      const res = await get(`/api/v1/icon/dynamic?address=${address}`);
      expect(res.statusCode).toBe(200);
      expect(res.headers['cache-control'], address).toMatch(/^public, max-age=(\d+)$/);
      expect(Number(/max-age=(\d+)/.exec(res.headers['cache-control'] as string)![1])).toBeLessThanOrEqual(60);
    }
    const sharp = await get(`/api/v1/icon/sharp?address=127.0.0.1:${await freePort()}`);
    expect(sharp.headers['cache-control']).not.toContain('s-maxage');
  });

  it('answers a matching If-None-Match with 304 and no body', async () => {
    const first = await get(`/api/v1/icon/dynamic?address=${target}&size=48`);
    const etag = first.headers['etag'] as string;
    expect(etag).toMatch(/^".+"$/);
    const again = await get(`/api/v1/icon/dynamic?address=${target}&size=48`, { 'if-none-match': etag });
    expect(again.statusCode).toBe(304);
    expect(again.rawPayload.length).toBe(0);
    // Answered from the ETag alone, before the render cache is consulted.
    expect(again.headers['x-render-cache']).toBeUndefined();
  });
});

describe('/api/v1/icon/sharp', () => {
  it('has rounded, transparent corners at the default 128 px', async () => {
    const res = await get(`/api/v1/icon/sharp?address=${target}`);
    expect(res.headers['content-type']).toBe('image/png');
    const { info, at } = await pixels(res.rawPayload);
    expect([info.width, info.height]).toEqual([128, 128]);
    for (const [x, y] of [[0, 0], [127, 0], [0, 127], [127, 127]] as const) expect(at(x, y)[3]).toBe(0);
    expect(at(64, 64)[3]).toBe(255);
    expect(at(64, 0)[3]).toBe(255);
  });
});

describe('/api/v1/banner/{address}', () => {
  it.each([
    ['small', 400, 130],
    ['normal', 600, 180],
    ['large', 800, 240],
  ])('draws the %s size at %ix%i', async (size, width, height) => {
    for (const style of ['modern', 'classic']) {
      const res = await get(`/api/v1/banner/${target}?size=${size}&style=${style}`);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('image/png');
      const meta = await sharp(res.rawPayload).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['png', width, height]);
    }
  });

  it('draws the player count in the accent colour', async () => {
    const count = async (url: string) => {
      const { data } = await pixels((await get(url)).rawPayload);
      let n = 0;
      for (let i = 0; i < data.length; i += 4) if (data[i]! > 240 && data[i + 1]! < 15 && data[i + 2]! > 240) n += 1;
      return n;
    };
    expect(await count(`/api/v1/banner/${target}?accentColor=%23FF00FF`)).toBeGreaterThan(40);
    expect(await count(`/api/v1/banner/${target}?accentColor=f0f&style=classic`)).toBeGreaterThan(40);
    expect(await count(`/api/v1/banner/${target}`)).toBe(0);
  });

  it.each(['showFavicon', 'showMotd', 'showPing'])('%s=false changes the pixels', async (toggle) => {
    const on = await get(`/api/v1/banner/${target}`);
    const off = await get(`/api/v1/banner/${target}?${toggle}=false`);
    expect(off.statusCode).toBe(200);
    expect(off.rawPayload.equals(on.rawPayload)).toBe(false);
  });

  it('textColor and borderRadius change the pixels; corners are transparent when rounded', async () => {
    const base = await get(`/api/v1/banner/${target}?borderRadius=0`);
    const rounded = await get(`/api/v1/banner/${target}?borderRadius=2`);
    const coloured = await get(`/api/v1/banner/${target}?borderRadius=0&textColor=%23ff0`);
    expect((await pixels(base.rawPayload)).at(0, 0)[3]).toBe(255);
    expect((await pixels(rounded.rawPayload)).at(0, 0)[3]).toBe(0);
    expect(coloured.rawPayload.equals(base.rawPayload)).toBe(false);
  });

  it('draws a clear offline banner for a server that is down', async () => {
    const res = await get(`/api/v1/banner/127.0.0.1:${await freePort()}`);
    expect(res.statusCode).toBe(200);
    expect((await sharp(res.rawPayload).metadata()).width).toBe(600);
    expect(res.headers['cache-control']).toMatch(/^public, max-age=\d+$/);
  });

  it('caches renders asked for again and revalidates with ETag', async () => {
    const first = await get(`/api/v1/banner/${target}?size=small`);
    await get(`/api/v1/banner/${target}?size=small`);
    const second = await get(`/api/v1/banner/${target}?size=small`);
    expect(second.headers['x-render-cache']).toBe('HIT');
    expect(second.headers['etag']).toBe(first.headers['etag']);
    const cond = await get(`/api/v1/banner/${target}?size=small`, { 'if-none-match': `W/${first.headers['etag']}` });
    expect(cond.statusCode).toBe(304);
  });
});

describe('image addresses and revalidation', () => {
  it('draws an offline banner for a name with no DNS records, with one stable ETag', async () => {
    const first = await get('/api/v1/banner/missing.observer.test?size=small');
    expect(first.statusCode).toBe(200);
    expect(first.headers['content-type']).toBe('image/png');
    expect(first.headers['cache-control']).toBe('public, max-age=60');
    const meta = await sharp(first.rawPayload).metadata();
    expect([meta.width, meta.height]).toEqual([400, 130]);
    await get('/api/v1/banner/missing.observer.test?size=small');
    const second = await get('/api/v1/banner/missing.observer.test?size=small');
    expect(second.headers['x-render-cache']).toBe('HIT');
    expect(second.headers['etag']).toBe(first.headers['etag']);
    const cond = await get('/api/v1/banner/missing.observer.test?size=small', { 'if-none-match': first.headers['etag'] as string });
    expect(cond.statusCode).toBe(304);
  });

  it.each([
    ['/api/v1/banner/10.0.0.1', 'target_refused'],
    ['/api/v1/icon/dynamic?address=192.168.1.1', 'target_refused'],
    ['/api/v1/icon/sharp?address=bad%20host', 'invalid_address'],
    ['/api/v1/banner/bad%20host', 'invalid_address'],
  ])('%s is a 400 %s', async (url, code) => {
    const res = await get(url);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ status: 'error', error: code });
  });

  it('compares If-None-Match before rendering: a cold instance answers 304 with nothing rendered', async () => {
    const url = `/api/v1/icon/dynamic?address=${target}&size=48`;
    const etag = (await get(url)).headers['etag'] as string;
    const cold = await appWith({ RATE_LIMIT_MEDIA: '100000' });
    try {
      const revalidated = await cold.inject({ url, headers: { 'if-none-match': etag } });
      expect(revalidated.statusCode).toBe(304);
      expect(revalidated.headers['etag']).toBe(etag);
      expect(revalidated.headers['x-render-cache']).toBeUndefined();
      // The 304 rendered nothing: the first full request is the first render.
      const full = await cold.inject({ url });
      expect(full.headers['x-render-cache']).toBe('MISS');
      expect(full.headers['etag']).toBe(etag);
    } finally {
      await cold.close();
    }
  });

  it('keys icons by favicon: a different size or format is a different ETag', async () => {
    const a = await get(`/api/v1/icon/dynamic?address=${target}&size=64`);
    const b = await get(`/api/v1/icon/dynamic?address=${target}&size=65`);
    const c = await get(`/api/v1/icon/dynamic?address=${target}&size=64&format=webp`);
    expect(new Set([a.headers['etag'], b.headers['etag'], c.headers['etag']]).size).toBe(3);
  });
});

describe('/api/v1/banner/motd', () => {
  it('renders 800x180 from § and & codes without querying any server', async () => {
    const res = await get(`/api/v1/banner/motd?motd=${encodeURIComponent('§aGreen &cRed &lBold')}`);
    expect(res.statusCode).toBe(200);
    const { info, data } = await pixels(res.rawPayload);
    expect([info.width, info.height]).toEqual([800, 180]);
    let red = 0;
    for (let i = 0; i < data.length; i += 4) if (data[i]! > 240 && data[i + 1]! < 100 && data[i + 2]! < 100) red += 1;
    expect(red).toBeGreaterThan(40);
  });

  it('sends an ETag and a day of Cache-Control, answers If-None-Match with 304, keeps a text asked for again', async () => {
    const url = `/api/v1/banner/motd?motd=${encodeURIComponent('&6Gold')}&textColor=%23abc`;
    const first = await get(url);
    expect(first.headers['content-type']).toBe('image/png');
    expect(first.headers['cache-control']).toBe('public, max-age=86400');
    expect(first.headers['x-render-cache']).toBe('MISS');
    expect((await get(url)).headers['x-render-cache']).toBe('MISS');
    const again = await get(url);
    expect(again.headers['x-render-cache']).toBe('HIT');
    expect(again.rawPayload.equals(first.rawPayload)).toBe(true);
    expect(again.headers['etag']).toBe(first.headers['etag']);
    expect((await get(url, { 'if-none-match': first.headers['etag'] as string })).statusCode).toBe(304);
    const other = await get(`/api/v1/banner/motd?motd=${encodeURIComponent('&6Gold')}&textColor=%23abd`);
    expect(other.headers['etag']).not.toBe(first.headers['etag']);
    expect(other.headers['x-render-cache']).toBe('MISS');
  });

  it('is not rate-limited', async () => {
    const limited = await appWith({ RATE_LIMIT_MEDIA: '1' });
    try {
      for (let i = 0; i < 3; i++) expect((await limited.inject({ url: '/api/v1/banner/motd?motd=hi' })).statusCode).toBe(200);
      expect((await limited.inject({ url: '/api/v1/icon/dynamic?address=missing.observer.test' })).statusCode).toBe(200);
      expect((await limited.inject({ url: '/api/v1/icon/dynamic?address=missing.observer.test' })).statusCode).toBe(429);
    } finally {
      await limited.close();
    }
  });
});

describe('OpenAPI of the icon routes', () => {
  it('requires address on /icon/sharp, and address or server on /icon/dynamic', async () => {
    const doc = (await get('/api/v1/openapi.json')).json();
    const param = (path: string, name: string) =>
      (doc.paths[path].get.parameters as Array<{ name: string; required: boolean; description: string }>).find((p) => p.name === name);
    expect(param('/icon/sharp', 'address')?.required).toBe(true);
    expect(param('/icon/dynamic', 'address')).toMatchObject({ required: false });
    expect(param('/icon/dynamic', 'address')?.description).toContain('Required unless `server` is given');
    expect(param('/icon/dynamic', 'server')).toMatchObject({ required: false });
    for (const url of ['/api/v1/icon/dynamic', '/api/v1/icon/dynamic?size=64', '/api/v1/icon/sharp?size=64']) {
      const res = await get(url);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_parameter', message: 'The query parameter "address" is required.' });
    }
  });
});

describe('bad input is a 400 in the error shape', () => {
  it.each([
    ['/api/v1/icon/dynamic', 'address'],
    ['/api/v1/icon/dynamic?address=x.observer.test&size=15', 'size'],
    ['/api/v1/icon/dynamic?address=x.observer.test&size=257', 'size'],
    ['/api/v1/icon/dynamic?address=x.observer.test&format=gif', 'format'],
    ['/api/v1/icon/dynamic?address=x.observer.test&legacy=true&bedrock=true', 'legacy'],
    ['/api/v1/icon/dynamic?address=bad%20host', 'address'],
    ['/api/v1/icon/sharp?address=x.observer.test&size=31', 'size'],
    ['/api/v1/icon/sharp?address=x.observer.test&size=513', 'size'],
    ['/api/v1/icon/sharp', 'address'],
    ['/api/v1/banner/x.observer.test?size=huge', 'size'],
    ['/api/v1/banner/x.observer.test?style=retro', 'style'],
    ['/api/v1/banner/x.observer.test?textColor=red', 'textColor'],
    ['/api/v1/banner/x.observer.test?accentColor=%2312', 'accentColor'],
    ['/api/v1/banner/x.observer.test?accentColor=%231234567', 'accentColor'],
    ['/api/v1/banner/x.observer.test?textColor=%23GGGGGG', 'textColor'],
    ['/api/v1/banner/x.observer.test?borderRadius=-1', 'borderRadius'],
    ['/api/v1/banner/x.observer.test?borderRadius=99', 'borderRadius'],
    ['/api/v1/banner/x.observer.test?showPing=sometimes', 'showPing'],
    ['/api/v1/banner/motd', 'motd'],
    [`/api/v1/banner/motd?motd=${'a'.repeat(301)}`, 'motd'],
    ['/api/v1/banner/motd?motd=hi&textColor=blue', 'textColor'],
  ])('%s', async (url, parameter) => {
    const res = await get(url);
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.status).toBe('error');
    expect(body.message).toContain(parameter);
  });
});
