/// <reference lib="dom" />
/**
 * /badge/{address} and /shields/{address} against real Minecraft servers on loopback: the SVG
 * parsed by Chromium's XML parser and drawn by Chromium (every text inside its part, nothing
 * painted outside the badge, with the measured font and with a wider substitute), the JSON
 * checked against shields.io's documented endpoint schema, bad options, cache headers and the
 * media tier.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Browser, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { createStatusService } from '../../src/status/index.js';
import { testApp, testConfig } from '../support/app.js';
import { freePort, freeUdpPort } from '../../scripts/ports.mjs';
import { startBedrockServer, startJavaServer, type RunningBedrockServer, type RunningJavaServer } from '../support/minecraft.js';
import { launchBrowser, tearDown } from '../web/harness.js';

const require = createRequire(import.meta.url);

/** The app with a real status service, on the test network's settings and `env`. */
const appWith = (env: Record<string, string> = {}) => testApp(env, { status: createStatusService({ config: testConfig(env), clock: systemClock, icmp: null }) });

let app: Awaited<ReturnType<typeof appWith>>;
let java: RunningJavaServer;
let bedrock: RunningBedrockServer;
let browser: Browser;
let page: Page;
let online: string;
let offline: string;

beforeAll(async () => {
  app = await appWith({ RATE_LIMIT_MEDIA: '100000' });
  java = await startJavaServer({ onlinePlayers: 12, maxPlayers: 100 });
  bedrock = await startBedrockServer({ port: await freeUdpPort(), playersOnline: 3, playersMax: 40 });
  online = `127.0.0.1:${java.port}`;
  offline = `127.0.0.1:${await freePort()}`;
  browser = await launchBrowser();
  page = await (await browser.newContext({ deviceScaleFactor: 1 })).newPage();
}, 60_000);

afterAll(() =>
  tearDown([
    ['browser', browser && (() => browser.close())],
    ['app', app && (() => app.close())],
    ['java server', java && (() => java.close())],
    ['bedrock server', bedrock && (() => bedrock.close())],
  ]),
);

const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers });

/** The SVG as Chromium's XML parser reads it: a parse error, or the accessible name and the texts. */
async function parseInChromium(svg: string) {
  return page.evaluate((source) => {
    const doc = new DOMParser().parseFromString(source, 'image/svg+xml');
    const error = doc.querySelector('parsererror');
    const root = doc.documentElement;
    return {
      error: error?.textContent ?? null,
      root: root.localName,
      namespace: root.namespaceURI,
      role: root.getAttribute('role'),
      ariaLabel: root.getAttribute('aria-label'),
      title: root.querySelector(':scope > title')?.textContent ?? null,
      texts: Array.from(root.querySelectorAll('text:not([aria-hidden])')).map((t) => t.textContent),
    };
  }, svg);
}

async function badge(path: string) {
  const res = await get(path);
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers['content-type']).toBe('image/svg+xml; charset=utf-8');
  return res.body;
}

describe('/api/v1/badge/{address}: the SVG', () => {
  it('is well-formed SVG named by its title and aria-label, online (Java and Bedrock) and offline', async () => {
    const cases: Array<[string, string, string[]]> = [
      [`/api/v1/badge/${online}`, 'minecraft: 12/100 online', ['minecraft', '12/100 online']],
      [`/api/v1/badge/${bedrock.host}:${bedrock.port}?bedrock=true`, 'minecraft: 3/40 online', ['minecraft', '3/40 online']],
      [`/api/v1/badge/${offline}`, 'minecraft: offline', ['minecraft', 'offline']],
      ['/api/v1/badge/missing.observer.test', 'minecraft: offline', ['minecraft', 'offline']],
      [`/api/v1/badge/${online}?label=players&style=for-the-badge`, 'players: 12/100 online', ['PLAYERS', '12/100 ONLINE']],
      [`/api/v1/badge/${offline}?label=`, 'offline', ['offline']],
    ];
    for (const [path, name, texts] of cases) {
      const parsed = await parseInChromium(await badge(path));
      expect(parsed, path).toEqual({ error: null, root: 'svg', namespace: 'http://www.w3.org/2000/svg', role: 'img', ariaLabel: name, title: name, texts });
    }
  });

  it('keeps a hostile label as text: escaped, still well-formed', async () => {
    const label = `<script>alert(1)</script>&"'`;
    const svg = await badge(`/api/v1/badge/${online}?label=${encodeURIComponent(label)}`);
    expect(svg).not.toContain('<script>');
    const parsed = await parseInChromium(svg);
    expect(parsed.error).toBeNull();
    expect(parsed.title).toBe(`${label}: 12/100 online`);
    expect(parsed.ariaLabel).toBe(`${label}: 12/100 online`);
    expect(parsed.texts).toEqual([label, '12/100 online']);
  });

  it('uses the colours asked for, and dark text on a light colour', async () => {
    const svg = await badge(`/api/v1/badge/${online}?labelColor=fff&onlineColor=%23123456`);
    expect(svg).toContain('fill="#ffffff"/>');
    expect(svg).toContain('fill="#123456"/>');
    // The label's text is dark on its white background.
    expect(svg).toMatch(/<text x="6" y="14" fill="#1f2328"[^>]*>minecraft<\/text>/);
    const down = await badge(`/api/v1/badge/${offline}?offlineColor=abc`);
    expect(down).toContain('fill="#aabbcc"/>');
  });
});

const NOTO = (weight: number) => readFileSync(require.resolve(`@fontsource/noto-sans/files/noto-sans-latin-${weight}-normal.woff2`)).toString('base64');

/**
 * The SVG inlined at (20, 20) in a magenta page, `overflow: visible` so that anything drawn
 * outside the badge would show; `withNoto` loads the font the widths were measured with.
 */
async function showInline(svg: string, withNoto: boolean) {
  const faces = withNoto
    ? [400, 700].map((w) => `@font-face{font-family:'Noto Sans';font-weight:${w};src:url(data:font/woff2;base64,${NOTO(w)}) format('woff2')}`).join('')
    : '';
  await page.setContent(
    `<!doctype html><html><head><style>${faces}html,body{margin:0;background:#ff00ff}div{position:absolute;left:20px;top:20px}svg{display:block;overflow:visible}</style></head><body><div>${svg}</div></body></html>`,
  );
  await page.evaluate(async () => {
    await document.fonts.load('11px "Noto Sans"');
    await document.fonts.load('bold 10px "Noto Sans"');
    await document.fonts.ready;
  });
  const loaded = await page.evaluate(() => {
    let n = 0;
    document.fonts.forEach((f) => (n += f.family.includes('Noto Sans') && f.status === 'loaded' ? 1 : 0));
    return n;
  });
  expect(loaded).toBe(withNoto ? 2 : 0);
}

interface TextBox {
  text: string;
  /** The part (rect) the text sits on. */
  part: { x: number; width: number };
  height: number;
  box: { x: number; y: number; width: number; height: number };
  textLength: number;
  /** The width the browser's font gives the text without `textLength`. */
  natural: number;
}

async function textBoxes(): Promise<TextBox[]> {
  return page.evaluate(() => {
    const svg = document.querySelector('svg')!;
    const rects = Array.from(svg.querySelectorAll('g > rect')).filter((r) => r.getAttribute('fill')?.startsWith('#'));
    return Array.from(svg.querySelectorAll('text')).map((t) => {
      const x = Number(t.getAttribute('x'));
      const rect = rects.find((r) => Number(r.getAttribute('x')) <= x && x < Number(r.getAttribute('x')) + Number(r.getAttribute('width')))!;
      const b = t.getBBox();
      const bare = t.cloneNode(true) as SVGTextElement;
      bare.removeAttribute('textLength');
      bare.removeAttribute('lengthAdjust');
      t.parentNode!.appendChild(bare);
      const natural = bare.getComputedTextLength();
      bare.remove();
      return {
        text: t.textContent ?? '',
        part: { x: Number(rect.getAttribute('x')), width: Number(rect.getAttribute('width')) },
        height: Number(svg.getAttribute('height')),
        box: { x: b.x, y: b.y, width: b.width, height: b.height },
        textLength: Number(t.getAttribute('textLength')),
        natural,
      };
    });
  });
}

/** Pixels of the screenshot outside the badge that are not the page's magenta. */
async function paintedOutside(width: number, height: number): Promise<number> {
  const shot = await page.screenshot({ clip: { x: 0, y: 0, width: width + 40, height: height + 40 } });
  const { data, info } = await sharp(shot).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  let painted = 0;
  for (let y = 0; y < info.height; y++)
    for (let x = 0; x < info.width; x++) {
      if (x >= 20 && x < 20 + width && y >= 20 && y < 20 + height) continue;
      const i = (y * info.width + x) * 4;
      if (data[i] !== 255 || data[i + 1] !== 0 || data[i + 2] !== 255) painted += 1;
    }
  return painted;
}

describe('/api/v1/badge/{address}: drawn by Chromium', () => {
  const labels = ['minecraft', 'A wide label: WWW MMM ÄÖÜ mmm www', 'iiiiii'];
  for (const style of ['flat', 'flat-square', 'for-the-badge']) {
    it(`${style}: every text fits its part, nothing is drawn outside, with the measured font and with a substitute`, async () => {
      for (const label of labels) {
        const svg = await badge(`/api/v1/badge/${online}?style=${style}&label=${encodeURIComponent(label)}`);
        const [, width, height] = /width="(\d+)" height="(\d+)"/.exec(svg)!.map(Number) as [string, number, number];
        for (const withNoto of [true, false]) {
          await showInline(svg, withNoto);
          const boxes = await textBoxes();
          expect(boxes.length).toBeGreaterThanOrEqual(2);
          for (const t of boxes) {
            const where = `${style} ${label} ${withNoto ? 'Noto Sans' : 'substitute'}: ${t.text}`;
            expect(t.box.x, where).toBeGreaterThanOrEqual(t.part.x + 1);
            expect(t.box.x + t.box.width, where).toBeLessThanOrEqual(t.part.x + t.part.width - 1);
            expect(t.box.y, where).toBeGreaterThanOrEqual(0);
            expect(t.box.y + t.box.height, where).toBeLessThanOrEqual(t.height);
            // The width was measured with the real font: Chromium gives Noto Sans the same one.
            const spacing = style === 'for-the-badge' ? 1.2 * ([...t.text].length - 1) : 0;
            if (withNoto) expect(Math.abs(t.natural + spacing - t.textLength), where).toBeLessThan(0.5);
          }
          expect(await paintedOutside(width, height), `${style} ${label}`).toBe(0);
        }
      }
    });
  }

  it('the substitute font is wider than the measured one: without textLength a long label would overflow its part', async () => {
    const text = 'A wide label: WWW MMM ÄÖÜ mmm www';
    const svg = await badge(`/api/v1/badge/${online}?label=${encodeURIComponent(text)}`);
    await showInline(svg, false);
    const label = (await textBoxes()).find((t) => t.text === text)!;
    // The text starts 6 px into its part.
    expect(6 + label.natural).toBeGreaterThan(label.part.x + label.part.width);
  });
});

/**
 * shields.io's endpoint schema, version 1, as its documentation states it
 * (https://shields.io/badges/endpoint-badge): unknown keys are refused.
 */
const SHIELDS_ENDPOINT_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['schemaVersion', 'label', 'message'],
  properties: {
    schemaVersion: { const: 1 },
    label: { type: 'string' },
    message: { type: 'string', minLength: 1 },
    color: { type: 'string' },
    labelColor: { type: 'string' },
    isError: { type: 'boolean' },
    namedLogo: { type: 'string' },
    logoSvg: { type: 'string' },
    logoColor: { type: 'string' },
    logoSize: { type: 'string' },
    style: { enum: ['flat', 'flat-square', 'plastic', 'for-the-badge', 'social'] },
    cacheSeconds: { type: 'integer', minimum: 0 },
  },
};
const validateShields = new Ajv2020({ strict: true, allErrors: true }).compile(SHIELDS_ENDPOINT_SCHEMA);
/** Colours shields.io accepts that Observer sends: hex with `#`. */
const HEX = /^#[0-9a-f]{6}$/;

describe('/api/v1/shields/{address}', () => {
  it("answers shields.io's endpoint schema for online, offline and unknown servers", async () => {
    const cases: Array<[string, Record<string, unknown>]> = [
      [`/api/v1/shields/${online}`, { label: 'minecraft', message: '12/100 online', color: '#2e7d32', isError: false }],
      [`/api/v1/shields/${bedrock.host}:${bedrock.port}?bedrock=true&label=bedrock`, { label: 'bedrock', message: '3/40 online', isError: false }],
      [`/api/v1/shields/${offline}?offlineColor=f00`, { label: 'minecraft', message: 'offline', color: '#ff0000', isError: true }],
      ['/api/v1/shields/missing.observer.test?label=&style=for-the-badge', { label: '', message: 'offline', style: 'for-the-badge', isError: true }],
    ];
    for (const [path, expected] of cases) {
      const res = await get(path);
      expect(res.statusCode, path).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      const body = res.json();
      expect(validateShields(body), JSON.stringify(validateShields.errors)).toBe(true);
      expect(body).toMatchObject({ schemaVersion: 1, ...expected });
      expect(body.color).toMatch(HEX);
      expect(body.labelColor).toMatch(HEX);
      // shields.io ignores less than 300 seconds.
      expect(body.cacheSeconds).toBeGreaterThanOrEqual(300);
    }
  });

  it('asks shields.io to keep it as long as a status stays fresh, when that is longer than its minimum', async () => {
    const slow = await appWith({ STATUS_CACHE_TTL: '900' });
    try {
      expect((await slow.inject(`/api/v1/shields/${offline}`)).json().cacheSeconds).toBe(900);
    } finally {
      await slow.close();
    }
  });
});

describe('badge caching', () => {
  for (const route of ['badge', 'shields']) {
    it(`/${route}: Cache-Control follows the status, an ETag that follows the content, 304 on a match`, async () => {
      const first = await get(`/api/v1/${route}/${online}`);
      expect(first.headers['cache-control']).toMatch(/^public, max-age=\d+$/);
      expect(Number(/max-age=(\d+)/.exec(first.headers['cache-control'] as string)![1])).toBeLessThanOrEqual(60);
      const etag = first.headers['etag'] as string;
      expect(etag).toMatch(/^"[\w-]+"$/);
      expect((await get(`/api/v1/${route}/${online}`)).headers['etag']).toBe(etag);
      const again = await get(`/api/v1/${route}/${online}`, { 'if-none-match': `W/${etag}` });
      expect(again.statusCode).toBe(304);
      expect(again.rawPayload.length).toBe(0);
      expect(again.headers['etag']).toBe(etag);
      // Other content, other tag: a label, the state.
      expect((await get(`/api/v1/${route}/${online}?label=mc`)).headers['etag']).not.toBe(etag);
      expect((await get(`/api/v1/${route}/${offline}`)).headers['etag']).not.toBe(etag);
      // A name with no DNS records: an offline badge, cached as long as that answer.
      const unknown = await get(`/api/v1/${route}/missing.observer.test`);
      expect(unknown.statusCode).toBe(200);
      expect(unknown.headers['cache-control']).toBe('public, max-age=60');
    });
  }

  it('the SVG cannot run or load anything when opened on its own', async () => {
    const res = await get(`/api/v1/badge/${online}`);
    expect(res.headers['content-security-policy']).toBe("default-src 'none'");
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it('both are on the media tier', async () => {
    const limited = await appWith({ RATE_LIMIT_MEDIA: '2' });
    try {
      for (const path of ['/api/v1/badge/missing.observer.test', '/api/v1/shields/missing.observer.test']) {
        expect((await limited.inject(path)).headers['ratelimit-policy']).toBe('"media";q=2;w=60');
      }
      const third = await limited.inject('/api/v1/badge/missing.observer.test');
      expect(third.statusCode).toBe(429);
      expect(third.json()).toMatchObject({ status: 'error', error: 'rate_limited' });
    } finally {
      await limited.close();
    }
  });
});

describe('bad badge options are a 400 in the error shape', () => {
  const cases: Array<[string, string, string]> = [
    ['style=round', 'style', 'invalid_parameter'],
    ['labelColor=red', 'labelColor', 'invalid_parameter'],
    ['onlineColor=%2312', 'onlineColor', 'invalid_parameter'],
    ['offlineColor=%231234567', 'offlineColor', 'invalid_parameter'],
    ['labelColor=%23GGG', 'labelColor', 'invalid_parameter'],
    [`label=${'a'.repeat(65)}`, 'label', 'invalid_parameter'],
    ['label=a%0Ab', 'label', 'invalid_parameter'],
    ['bedrock=maybe', 'bedrock', 'invalid_parameter'],
    ['legacy=true&bedrock=true', 'legacy', 'invalid_query'],
  ];
  for (const route of ['badge', 'shields']) {
    it.each(cases)(`/${route}?%s names %s`, async (query, parameter, code) => {
      const res = await get(`/api/v1/${route}/x.observer.test?${query}`);
      expect(res.statusCode).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      const body = res.json();
      expect(body).toMatchObject({ status: 'error', error: code });
      expect(body.message).toContain(parameter);
    });
    it.each([
      ['bad%20host', 'invalid_address'],
      ['10.0.0.1', 'target_refused'],
    ])(`/${route}/%s is a 400 %s`, async (address, code) => {
      const res = await get(`/api/v1/${route}/${address}`);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ status: 'error', error: code });
    });
  }
});

describe('OpenAPI of the badge routes', () => {
  it('documents both routes, their options and the shields.io body', async () => {
    const doc = (await get('/api/v1/openapi.json')).json();
    const names = (path: string) => (doc.paths[path].get.parameters as Array<{ name: string }>).map((p) => p.name).sort();
    const options = ['address', 'bedrock', 'label', 'labelColor', 'legacy', 'offlineColor', 'onlineColor', 'style'];
    expect(names('/badge/{address}')).toEqual(options);
    expect(names('/shields/{address}')).toEqual(options);
    expect(Object.keys(doc.paths['/badge/{address}'].get.responses['200'].content)).toEqual(['image/svg+xml']);
    const body = doc.paths['/shields/{address}'].get.responses['200'].content['application/json'].schema;
    expect(Object.keys(body.properties).sort()).toEqual(['cacheSeconds', 'color', 'isError', 'label', 'labelColor', 'message', 'schemaVersion', 'style']);
  });
});
