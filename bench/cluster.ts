/**
 * Cluster figures (docs/performance.md, docs/deployment.md):
 *  1. cached status throughput with REDIS_URL set, as a ratio of the single-instance figure
 *     (in-process cache and limits), same run, interleaved (target >= 0.8);
 *  2. Redis round trips per cached status request, counted with INFO commandstats before and
 *     after a fixed number of requests (target <= 1 for the status cache): a hot target, and
 *     500 cached targets in turn;
 *  3. 1 -> 2 instances (processes) behind deploy/nginx.conf.
 * Everything on loopback: an own redis-server, SQLite files, a minecraft-protocol server.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { composeApp } from '../src/compose.js';
import { loadConfig } from '../src/config/index.js';
import { startInstance, type Instance } from '../test/support/instances.js';
import { startJavaServer } from '../test/support/minecraft.js';
import { startNginx } from '../test/support/nginx.js';
import { startOwnRedis } from '../test/support/redis-process.js';
import { compareThroughput, fmt } from './support.js';

const dir = mkdtempSync(join(tmpdir(), 'observer-bench-cluster-'));
const redis = await startOwnRedis();
const server = await startJavaServer({ motd: 'cluster bench', onlinePlayers: 5 });
const env = {
  TARGET_ALLOWLIST: '127.0.0.0/8',
  DNS_SERVERS: '127.0.0.1:5353',
  STATUS_CACHE_TTL: '3600',
  RATE_LIMIT_STATUS: '10000000',
  TARGET_PINGS_PER_MINUTE: '100000',
  NEW_SERVERS_PER_CLIENT_PER_DAY: '1000000',
  LOG_LEVEL: 'silent',
};

async function listen(extra: Record<string, string>, name: string) {
  const { app } = await composeApp(loadConfig({ ...env, DATABASE_URL: `sqlite:${join(dir, `${name}.db`)}`, ...extra }), {
    logger: false,
    icmp: null,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, base: `http://127.0.0.1:${(app.server.address() as { port: number }).port}/api/v1` };
}

const hot = `/status/127.0.0.1:${server.port}`;
async function warm(base: string, path: string) {
  const body = (await (await fetch(base + path)).json()) as { online?: boolean };
  if (!body.online) throw new Error(`bench target not online: ${path}`);
}

// 1. Cached status, single instance vs with Redis.
const single = await listen({}, 'single');
const shared = await listen({ REDIS_URL: redis.url }, 'shared');
await warm(single.base, hot);
await warm(shared.base, hot);
const r = await compareThroughput({ single: single.base + hot, redis: shared.base + hot });
console.log('cached status, one process: 32 connections, 3 interleaved rounds of 3 s, median');
console.log(`  in-process cache and limits : ${fmt(r.single!.requestsPerSecond)} req/s (p99 ${fmt(r.single!.latencyP99Ms)} ms)`);
console.log(`  REDIS_URL set               : ${fmt(r.redis!.requestsPerSecond)} req/s (p99 ${fmt(r.redis!.latencyP99Ms)} ms, non-2xx ${r.redis!.non2xx})`);
console.log(`  ratio REDIS_URL / single    : ${fmt(r.redis!.requestsPerSecond / r.single!.requestsPerSecond, 2)}x (target >= 0.80)`);

// 2. Redis commands per cached request.
async function commandStats(): Promise<Map<string, number>> {
  const { Redis } = await import('ioredis');
  const client = new Redis(redis.url);
  try {
    const info = await client.info('commandstats');
    const calls = new Map<string, number>();
    for (const m of info.matchAll(/cmdstat_(\w+):calls=(\d+)/g)) calls.set(m[1]!, Number(m[2]));
    return calls;
  } finally {
    client.disconnect();
  }
}
async function perRequest(label: string, paths: string[], requests: number) {
  const before = await commandStats();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < requests; i = next++) {
      const res = await fetch(shared.base + paths[i % paths.length]!);
      await res.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  const after = await commandStats();
  const delta = (cmd: string) => (after.get(cmd) ?? 0) - (before.get(cmd) ?? 0);
  const status = delta('get');
  const limits = delta('evalsha') + delta('eval');
  const total = [...after.keys()].filter((c) => c !== 'info').reduce((sum, c) => sum + delta(c), 0);
  console.log(
    `  ${label.padEnd(34)}: status cache ${fmt(status / requests, 3)} (target <= 1), rate limit ${fmt(limits / requests, 3)}, all commands, those run by the script included, ${fmt(total / requests, 3)}`,
  );
}
const spread = Array.from({ length: 500 }, (_, i) => `/status/t${i}.any.observer.test:${server.port}`);
for (const path of spread) await warm(shared.base, path);
await new Promise((resolve) => setTimeout(resolve, 1_100)); // let the L1 forget the warm-up
console.log('Redis round trips per cached status request (INFO commandstats, 5,000 requests, 16 at a time)');
await perRequest('one hot target', [hot], 5_000);
await new Promise((resolve) => setTimeout(resolve, 1_100));
await perRequest('500 cached targets in turn', spread, 5_000);
await single.app.close();
await shared.app.close();

// 3. Instances behind nginx.
const instanceEnv = { ...env, REDIS_URL: redis.url, TRUST_PROXY: '127.0.0.1/32', LOG_LEVEL: 'warn' };
const instances: Instance[] = [];
for (const name of ['n1', 'n2']) instances.push(await startInstance({ ...instanceEnv, DATABASE_URL: `sqlite:${join(dir, `${name}.db`)}` }));
const oneBehind = await startNginx([instances[0]!.port]);
const twoBehind = await startNginx(instances.map((i) => i.port));
for (const url of [instances[0]!.url, oneBehind.url, twoBehind.url]) await warm(`${url}/api/v1`, hot);
const n = await compareThroughput(
  {
    direct: `${instances[0]!.url}/api/v1${hot}`,
    one: `${oneBehind.url}/api/v1${hot}`,
    two: `${twoBehind.url}/api/v1${hot}`,
  },
  { connections: 64 },
);
console.log('cached status through nginx (processes, REDIS_URL set): 64 connections, 3 interleaved rounds of 3 s, median');
console.log(`  one instance, no proxy      : ${fmt(n.direct!.requestsPerSecond)} req/s`);
console.log(`  nginx -> 1 instance         : ${fmt(n.one!.requestsPerSecond)} req/s (p99 ${fmt(n.one!.latencyP99Ms)} ms)`);
console.log(`  nginx -> 2 instances        : ${fmt(n.two!.requestsPerSecond)} req/s (p99 ${fmt(n.two!.latencyP99Ms)} ms)`);
console.log(`  scaling 1 -> 2 instances    : ${fmt(n.two!.requestsPerSecond / n.one!.requestsPerSecond, 2)}x on ${(await import('node:os')).availableParallelism()} cores (load generator, nginx and instances share them)`);

await oneBehind.stop();
await twoBehind.stop();
await Promise.all(instances.map((i) => i.stop()));
await server.close();
await redis.stop();
rmSync(dir, { recursive: true, force: true });
