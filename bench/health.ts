/**
 * Health endpoint throughput next to a bare Fastify route answering the same bytes, in the
 * same run (issue: target at least 0.9 of the bare route).
 */
import Fastify from 'fastify';
import { loadConfig } from '../src/config/index.js';
import { buildApp } from '../src/http/app.js';
import { compareThroughput, fmt, ratioLine } from './support.js';

const app = await buildApp({ config: loadConfig({}), logger: false });
await app.listen({ host: '127.0.0.1', port: 0 });
const appUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/api/v1/status`;
const sample = await (await fetch(appUrl)).text();

const bare = Fastify({ logger: false });
bare.get('/api/v1/status', async (_req, reply) => {
  reply.header('content-type', 'application/json; charset=utf-8').header('cache-control', 'no-store').header('access-control-allow-origin', '*');
  return sample;
});
await bare.listen({ host: '127.0.0.1', port: 0 });
const bareUrl = `http://127.0.0.1:${(bare.server.address() as { port: number }).port}/api/v1/status`;

const r = await compareThroughput({ bare: bareUrl, health: appUrl });
console.log('health (GET /api/v1/status): 32 connections, 3 interleaved rounds of 3 s, median');
console.log(`  bare Fastify route : ${fmt(r.bare!.requestsPerSecond)} req/s (p50 ${r.bare!.latencyP50Ms} ms)`);
console.log(`  Observer health    : ${fmt(r.health!.requestsPerSecond)} req/s (p50 ${r.health!.latencyP50Ms} ms)`);
console.log('  ' + ratioLine('health / bare', r.health!.requestsPerSecond, r.bare!.requestsPerSecond, '>= 0.90'));
await app.close();
await bare.close();
