/**
 * Image figures: median render time of each image
 * uncached (target: a 600x180 banner under 10 ms), and requests per second of cached images
 * next to health in the same run (target: at least 0.8 of health).
 */
import { performance } from 'node:perf_hooks';
import Fastify from 'fastify';
import { loadConfig } from '../src/config/index.js';
import { systemClock } from '../src/core/clock.js';
import { buildApp } from '../src/http/app.js';
import { DEFAULT_BANNER_OPTIONS, registerRenderFonts } from '../src/render/index.js';
import { renderBanner, renderIcon, renderMotdBanner } from '../src/render/drawing.js';
import { createStatusService } from '../src/status/index.js';
import { startJavaServer } from '../test/support/minecraft.js';
import { compareThroughput, fmt, median, ratioLine } from './support.js';

const FAVICON =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const server = await startJavaServer({ motd: '§6Example §lNetwork\n§aNew season!', onlinePlayers: 1234, maxPlayers: 5000, favicon: FAVICON });
const config = loadConfig({ TARGET_ALLOWLIST: '127.0.0.0/8', STATUS_CACHE_TTL: '3600', RATE_LIMIT_MEDIA: '10000000' });
const status = createStatusService({ config, clock: systemClock, icmp: null });
const target = `127.0.0.1:${server.port}`;
const { status: s } = await status.lookup(target, 'java');
registerRenderFonts();

async function timeRender(fn: () => Promise<unknown>, n = 60): Promise<number> {
  for (let i = 0; i < 5; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return median(times);
}

console.log('uncached renders (median of 60, one at a time)');
const renders: Array<[string, () => Promise<unknown>, string]> = [
  ['banner 600x180 modern', () => renderBanner(s, DEFAULT_BANNER_OPTIONS), '< 10 ms'],
  ['banner 600x180 classic', () => renderBanner(s, { ...DEFAULT_BANNER_OPTIONS, style: 'classic' }), ''],
  ['banner 800x240 modern', () => renderBanner(s, { ...DEFAULT_BANNER_OPTIONS, size: 'large' }), ''],
  ['icon/dynamic 80 px png', () => renderIcon(s.favicon, { size: 80, format: 'png', rounded: false }), ''],
  ['icon/dynamic 256 px webp', () => renderIcon(s.favicon, { size: 256, format: 'webp', rounded: false }), ''],
  ['icon/sharp 128 px', () => renderIcon(s.favicon, { size: 128, format: 'png', rounded: true }), ''],
  ['banner/motd 800x180', () => renderMotdBanner('§aHello §cworld &lbold', { textColor: '#ffffff', accentColor: '#10b981' }), ''],
];
for (const [name, fn, target] of renders) {
  const ms = await timeRender(fn);
  console.log(`  ${name.padEnd(26)}: ${fmt(ms, 2)} ms  (${fmt(1000 / ms)} renders/s)${target ? `  target ${target}` : ''}`);
}

const app = await buildApp({ config, status, logger: false });
await app.listen({ host: '127.0.0.1', port: 0 });
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/api/v1`;
const urls = {
  health: `${base}/status`,
  banner: `${base}/banner/${target}`,
  iconDynamic: `${base}/icon/dynamic?address=${target}`,
  iconSharp: `${base}/icon/sharp?address=${target}`,
};
for (const url of Object.values(urls)) await fetch(url);
// A bare Fastify route answering the same banner bytes: what moving the payload alone costs here.
const bannerBytes = Buffer.from(await (await fetch(urls.banner)).arrayBuffer());
const bare = Fastify({ logger: false });
bare.get('/banner', async (_req, reply) => reply.type('image/png').send(bannerBytes));
await bare.listen({ host: '127.0.0.1', port: 0 });
const r = await compareThroughput({ ...urls, bareBanner: `http://127.0.0.1:${(bare.server.address() as { port: number }).port}/banner` });
console.log('cached images vs health: 32 connections, 3 interleaved rounds of 3 s, median');
for (const [name, result] of Object.entries(r)) console.log(`  ${name.padEnd(12)}: ${fmt(result.requestsPerSecond)} req/s (non-2xx ${result.non2xx})`);
for (const name of ['banner', 'iconDynamic', 'iconSharp']) {
  console.log('  ' + ratioLine(`${name} / health`, r[name]!.requestsPerSecond, r.health!.requestsPerSecond, '>= 0.80'));
}
console.log('  ' + ratioLine(`banner / bare route with the same ${bannerBytes.length} bytes`, r.banner!.requestsPerSecond, r.bareBanner!.requestsPerSecond, 'context'));
await bare.close();
await app.close();
await server.close();
