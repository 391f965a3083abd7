/**
 * Status endpoint figures:
 *  1. requests per second of a cached status next to health, same run (target >= 0.8);
 *  2. median time of an uncached status query minus a raw ping of the same server
 *     (target < 1 ms added), with ICMP off and on.
 * Everything runs against a minecraft-protocol server on 127.0.0.1.
 */
import { performance } from 'node:perf_hooks';
import Fastify from 'fastify';
import { loadConfig } from '../src/config/index.js';
import { systemClock } from '../src/core/clock.js';
import { buildApp } from '../src/http/app.js';
import { pingJava } from '../src/protocol/index.js';
import { IcmpPinger } from '../src/resolve/index.js';
import { createStatusService, type StatusCache } from '../src/status/index.js';
import { startJavaServer } from '../test/support/minecraft.js';
import { compareThroughput, fmt, median, ratioLine } from './support.js';

const server = await startJavaServer({ motd: 'bench', onlinePlayers: 5 });
const config = loadConfig({
  TARGET_ALLOWLIST: '127.0.0.0/8',
  STATUS_CACHE_TTL: '3600',
  RATE_LIMIT_STATUS: '10000000',
  TARGET_PINGS_PER_MINUTE: '100000',
  NEW_SERVERS_PER_CLIENT_PER_DAY: '1000000',
});

// 1. Cached status vs health.
const status = createStatusService({ config, clock: systemClock });
const app = await buildApp({ config, status, logger: false });
await app.listen({ host: '127.0.0.1', port: 0 });
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/api/v1`;
const statusUrl = `${base}/status/127.0.0.1:${server.port}`;
if (!((await (await fetch(statusUrl)).json()) as { online: boolean }).online) throw new Error('bench server not online');
// A bare Fastify route answering the same status bytes: what the payload alone costs here.
const statusBody = await (await fetch(statusUrl)).text();
const bare = Fastify({ logger: false });
bare.get('/same-bytes', async (_req, reply) => {
  reply.type('application/json; charset=utf-8');
  return statusBody;
});
await bare.listen({ host: '127.0.0.1', port: 0 });
const bareUrl = `http://127.0.0.1:${(bare.server.address() as { port: number }).port}/same-bytes`;
const r = await compareThroughput({ health: `${base}/status`, status: statusUrl, bare: bareUrl });
console.log('cached status vs health: 32 connections, 3 interleaved rounds of 3 s, median');
console.log(`  health                        : ${fmt(r.health!.requestsPerSecond)} req/s`);
console.log(`  cached status                 : ${fmt(r.status!.requestsPerSecond)} req/s (non-2xx ${r.status!.non2xx})`);
console.log(`  bare route, same status bytes : ${fmt(r.bare!.requestsPerSecond)} req/s`);
console.log('  ' + ratioLine('cached status / health', r.status!.requestsPerSecond, r.health!.requestsPerSecond, '>= 0.80'));
console.log('  ' + ratioLine('cached status / bare route with the same bytes', r.status!.requestsPerSecond, r.bare!.requestsPerSecond, 'context'));
await bare.close();
await app.close();

// 2. Uncached status query minus a raw ping. A cache that never hits makes every lookup a ping.
const noCache: StatusCache = { get: async () => undefined, set: async () => {}, close: async () => {} };
const ROUNDS = 300;
async function timeEach(fn: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < 20; i++) await fn(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return times;
}
const rawPing = () => pingJava({ ip: '127.0.0.1', port: server.port, hostname: '127.0.0.1', signal: AbortSignal.timeout(5000) });
const address = `127.0.0.1:${server.port}`;
const withoutIcmp = createStatusService({ config, clock: systemClock, cache: noCache, icmp: null });
// A pinger without its answer cache: every query sends its own echo over the shared raw socket.
const pinger = new IcmpPinger({ cacheMs: 0 });
const icmpMode = pinger.start();
const withIcmp = createStatusService({ config, clock: systemClock, cache: noCache, icmp: (ip, signal) => pinger.echo(ip, signal) });
const raw = median(await timeEach(rawPing));
const lookupNoIcmp = median(await timeEach(() => withoutIcmp.lookup(address, 'java')));
const lookupIcmp = median(await timeEach(() => withIcmp.lookup(address, 'java')));
const raw2 = median(await timeEach(rawPing));
const rawMedian = (raw + raw2) / 2;
console.log(`uncached status query vs raw ping (${ROUNDS} sequential queries each, median)`);
console.log(`  raw pingJava                 : ${fmt(rawMedian, 3)} ms`);
console.log(`  StatusService.lookup, no ICMP: ${fmt(lookupNoIcmp, 3)} ms  (added ${fmt(lookupNoIcmp - rawMedian, 3)} ms, target < 1 ms)`);
console.log(`  StatusService.lookup, ICMP on: ${fmt(lookupIcmp, 3)} ms  (added ${fmt(lookupIcmp - rawMedian, 3)} ms: one echo per query over the shared raw socket, mode ${icmpMode.mode})`);
pinger.close();
await server.close();
