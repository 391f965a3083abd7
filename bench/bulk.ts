/**
 * Bulk look-ups: time for 50 cached statuses in one POST /status/bulk next to 50
 * single GET /status/{address} requests, same run, same cached entries (50 distinct targets:
 * one minecraft-protocol server on 127.0.0.1 under 50 wildcard names of the test zone, so every
 * entry is its own cache entry). Load from autocannon in a child process, 8 connections,
 * interleaved rounds, medians. Traffic goes to 127.0.0.1 only (dnsmasq on 127.0.0.1:5353).
 */
import { loadConfig } from '../src/config/index.js';
import { systemClock } from '../src/core/clock.js';
import { buildApp } from '../src/http/app.js';
import { createStatusService } from '../src/status/index.js';
import { startJavaServer } from '../test/support/minecraft.js';
import { fmt, load, median } from './support.js';

const ENTRIES = 50;
const ROUNDS = 3;
const SECONDS = 3;
const CONNECTIONS = 8;

const server = await startJavaServer({ motd: 'bench', onlinePlayers: 5 });
const config = loadConfig({
  TARGET_ALLOWLIST: '127.0.0.0/8',
  DNS_SERVERS: '127.0.0.1:5353',
  STATUS_CACHE_TTL: '3600',
  RATE_LIMIT_STATUS: '10000000',
  TARGET_PINGS_PER_MINUTE: '100000',
  NEW_SERVERS_PER_CLIENT_PER_DAY: '1000000',
});
const status = createStatusService({ config, clock: systemClock, icmp: null });
const app = await buildApp({ config, status, logger: false });
await app.listen({ host: '127.0.0.1', port: 0 });
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/api/v1`;
const addresses = Array.from({ length: ENTRIES }, (_, i) => `bulk-bench-${i}.any.observer.test:${server.port}`);
const body = JSON.stringify({ servers: addresses.map((address) => ({ address })) });

// Warm the cache through the bulk endpoint and check every entry is a real status.
const warm = (await (await fetch(`${base}/status/bulk`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).json()) as {
  results: Array<{ online?: boolean }>;
};
if (warm.results.length !== ENTRIES || !warm.results.every((r) => r.online)) throw new Error('bench entries not online');

// autocannon hits one URL; 50 single requests are spread over the 50 cached addresses by
// measuring one of them (each is a cache hit of the same size) and multiplying by 50.
const singleUrl = `${base}/status/${addresses[0]}`;
const bulkRates: number[] = [];
const singleRates: number[] = [];
await load(singleUrl, { seconds: 1, connections: CONNECTIONS });
await load(`${base}/status/bulk`, { seconds: 1, connections: CONNECTIONS, method: 'POST', jsonBody: body });
for (let round = 0; round < ROUNDS; round++) {
  const single = await load(singleUrl, { seconds: SECONDS, connections: CONNECTIONS });
  const bulk = await load(`${base}/status/bulk`, { seconds: SECONDS, connections: CONNECTIONS, method: 'POST', jsonBody: body });
  if (single.non2xx + bulk.non2xx > 0) throw new Error('non-2xx answers during the bench');
  singleRates.push(single.requestsPerSecond);
  bulkRates.push(bulk.requestsPerSecond);
}
const single = median(singleRates);
const bulk = median(bulkRates);
const msSingles = (ENTRIES / single) * 1000;
const msBulk = (1 / bulk) * 1000;
console.log(`bulk of ${ENTRIES} cached entries vs ${ENTRIES} single requests: ${CONNECTIONS} connections, ${ROUNDS} interleaved rounds of ${SECONDS} s, median`);
console.log(`  single GET /status (cached)  : ${fmt(single)} req/s → ${fmt(msSingles, 2)} ms of server time per ${ENTRIES} entries`);
console.log(`  POST /status/bulk (${ENTRIES} cached): ${fmt(bulk)} req/s → ${fmt(msBulk, 2)} ms per request (${fmt(bulk * ENTRIES)} entries/s)`);
console.log(`  time per ${ENTRIES} entries, bulk / singles: ${fmt(msBulk / msSingles, 2)}x (lower is better)`);
await app.close();
await server.close();
