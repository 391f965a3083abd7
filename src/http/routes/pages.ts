/**
 * The web front: GET / (look-up form, trends, figures), GET /server/{address} (status card,
 * history chart, embed builder), their hashed static files under /assets/ and /favicon.ico.
 *
 * The pages are one HTML shell; web/src (bundled by web/build.mjs into dist/web) draws them
 * from the public API. The shell and the assets are read once, at start-up. Every URL in the
 * shell is relative to the page, so the front works under any prefix a reverse proxy adds.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Config } from '../../config/index.js';
import { escapeHtml } from '../../motd/index.js';
import { ObserverError } from '../../core/errors.js';
import type { RenderPool } from '../../render/index.js';
import { tierConfig } from '../rate-limit.js';

/** The name people see (core SERVICE_NAME is the machine-readable one). */
const SITE_NAME = 'Observer';

/** The repository's dist/web, from src/http/routes and from dist/http/routes alike. */
export const DEFAULT_WEB_DIR = fileURLToPath(new URL('../../../dist/web/', import.meta.url));

/** What web/build.mjs writes to dist/web/manifest.json. */
export interface WebManifest {
  /** File names under assets/ of the entry script and stylesheet. */
  js: string;
  css: string;
  /** Every file under assets/ that may be served (gzip twins are `<name>.gz`). */
  files: string[];
  /** Fonts the stylesheet loads first, to preload: paths under the API (`widget/fonts/…`). */
  preload: string[];
}

/**
 * Pages may only load from their own origin and run no inline script. Server text reaches
 * the DOM as text nodes (MOTD colours are set through the CSSOM, which `style-src` does not
 * restrict), so no `'unsafe-inline'` is needed anywhere.
 */
export const PAGE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "frame-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'self'",
].join('; ');

const CONTENT_TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  map: 'application/json; charset=utf-8',
};

/** A year, in the seconds of `Cache-Control: max-age`: the hashed assets never change. */
const ASSET_MAX_AGE_SECONDS = 31_536_000;
/** `../` per folder between the page and the service root, so relative URLs survive a proxy prefix. */
function rootPrefix(url: string): string {
  const path = url.split('?', 1)[0] ?? '/';
  const depth = path.split('/').length - 2;
  return depth > 0 ? '../'.repeat(depth) : './';
}

function shell(manifest: WebManifest, root: string, title: string): string {
  const preload = manifest.preload
    .map((file) => `<link rel="preload" href="${root}api/v1/${escapeHtml(file)}" as="font" type="font/woff2" crossorigin>`)
    .join('');
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    '<meta name="color-scheme" content="light dark">' +
    `<title>${escapeHtml(title)}</title>` +
    `<meta name="description" content="${SITE_NAME}: live status, uptime history and embeddable widgets for Minecraft Java and Bedrock servers.">` +
    `<link rel="icon" href="${root}favicon.ico" sizes="64x64">` +
    preload +
    `<link rel="stylesheet" href="${root}assets/${manifest.css}">` +
    `<script type="module" src="${root}assets/${manifest.js}"></script>` +
    '</head><body>' +
    '<a class="skip" href="#main">Skip to content</a>' +
    `<header class="top"><a class="brand" href="${root}">${SITE_NAME}</a>` +
    `<nav aria-label="Site"><a href="${root}docs">API docs</a></nav></header>` +
    '<main id="main" tabindex="-1"><noscript><p>This page needs JavaScript. The JSON API works without it: ' +
    `<a href="${root}docs">API docs</a>.</p></noscript></main>` +
    `<footer class="bottom"><p>${SITE_NAME} is a self-hosted Minecraft server status service. ` +
    'Not affiliated with Mojang or Microsoft.</p></footer>' +
    '</body></html>'
  );
}

/** An ICO file holding one PNG (Windows Vista and every browser read PNG-in-ICO). */
export function pngToIco(png: Buffer, side: number): Buffer {
  const header = Buffer.alloc(6 + 16);
  header.writeUInt16LE(0, 0); // reserved
  header.writeUInt16LE(1, 2); // type: icon
  header.writeUInt16LE(1, 4); // one image
  header.writeUInt8(side >= 256 ? 0 : side, 6); // width (0 = 256)
  header.writeUInt8(side >= 256 ? 0 : side, 7); // height
  header.writeUInt8(0, 8); // no palette
  header.writeUInt8(0, 9); // reserved
  header.writeUInt16LE(1, 10); // colour planes
  header.writeUInt16LE(32, 12); // bits per pixel
  header.writeUInt32LE(png.length, 14); // image size
  header.writeUInt32LE(22, 18); // image offset
  return Buffer.concat([header, png]);
}

/** The files under assets/ that may be served, by name, with their content type. */
function assetTypes(manifest: WebManifest): Map<string, string> {
  const types = new Map<string, string>();
  for (const file of manifest.files) {
    const type = CONTENT_TYPES[file.slice(file.lastIndexOf('.') + 1)];
    if (type) types.set(file, type);
  }
  return types;
}

function readManifest(dir: string): WebManifest | null {
  const path = join(dir, 'manifest.json');
  if (!existsSync(path)) return null;
  return JSON.parse(readFileSync(path, 'utf8')) as WebManifest;
}

const pageHeaders = (reply: FastifyReply) =>
  reply
    .header('Content-Security-Policy', PAGE_CSP)
    .header('X-Content-Type-Options', 'nosniff')
    .header('Referrer-Policy', 'same-origin');

type PageApp = Parameters<FastifyPluginAsyncTypebox>[0];

/**
 * GET /assets/{file}: the hashed files the manifest lists, read from disk by @fastify/static:
 * the `<name>.gz` twin for a client whose Accept-Encoding takes gzip (q-values honoured,
 * `gzip;q=0` refuses it), `Vary: Accept-Encoding`, and cached a year, immutable.
 */
async function registerAssets(app: PageApp, webDir: string, manifest: WebManifest | null): Promise<void> {
  const assets = manifest ? assetTypes(manifest) : new Map<string, string>();
  if (manifest) {
    await app.register(fastifyStatic, {
      root: join(webDir, 'assets'),
      serve: false,
      preCompressed: true,
      immutable: true,
      maxAge: ASSET_MAX_AGE_SECONDS * 1000,
      lastModified: false,
      setHeaders: (reply) => pageHeaders(reply),
    });
  }
  app.get(
    '/assets/:file',
    {
      config: tierConfig('media'),
      schema: { hide: true, params: Type.Object({ file: Type.String({ maxLength: 128 }) }) },
      // The type the build gave the file, also on its gzip twin (RFC 9239: text/javascript).
      onSend: (request, reply, payload, done) => {
        const type = assets.get(request.params.file);
        if (type !== undefined && reply.statusCode < 400) reply.header('content-type', type);
        done(null, payload);
      },
    },
    (request, reply) => {
      if (!assets.has(request.params.file)) throw new ObserverError('not_found', 404, 'No such asset.');
      return reply.sendFile(request.params.file);
    },
  );
}

export const pageRoutes: FastifyPluginAsyncTypebox<{ config: Config; webDir?: string; renders: RenderPool }> = async (
  app,
  { webDir = DEFAULT_WEB_DIR, renders },
) => {
  const manifest = readManifest(webDir);
  if (!manifest) app.log.warn({ webDir }, 'web front not built (npm run build): pages answer 503');
  const general = tierConfig('general');

  function page(request: FastifyRequest, reply: FastifyReply, title: string) {
    if (!manifest) throw new ObserverError('not_built', 503, 'The web front has not been built: run `npm run build`.');
    return pageHeaders(reply)
      .type('text/html; charset=utf-8')
      // The shell names the hashed assets of this build: revalidate it, cache them forever.
      .header('Cache-Control', 'no-cache')
      .send(shell(manifest, rootPrefix(request.url), title));
  }

  app.get('/', { config: general, schema: { hide: true } }, (request, reply) =>
    page(request, reply, `${SITE_NAME}: Minecraft server status`),
  );

  app.get(
    '/server/:address',
    { config: general, schema: { hide: true, params: Type.Object({ address: Type.String({ minLength: 1, maxLength: 1000 }) }) } },
    (request, reply) => page(request, reply, `${request.params.address.slice(0, 255)}: server status · ${SITE_NAME}`),
  );

  await registerAssets(app, webDir, manifest);

  let favicon: Promise<Buffer> | null = null;
  app.get('/favicon.ico', { config: tierConfig('media'), schema: { hide: true } }, async (_request, reply) => {
    favicon ??= renders.defaultIconPng().then((png) => pngToIco(png, 64));
    return pageHeaders(reply)
      .type('image/x-icon')
      .header('Cache-Control', 'public, max-age=86400')
      .send(await favicon);
  });
};
