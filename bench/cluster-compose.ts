/**
 * The cluster as compose.yaml runs it (test/support/compose-stack.ts: two instances in containers
 * on PostgreSQL and Redis, behind nginx, the compose test's settings), measured through nginx's
 * port on loopback:
 *  1. cached status answers per second (autocannon in its own process, 64 connections, 3
 *     rounds of 3 s, median) with both instances and with one stopped, interleaved, beside
 *     bench/cluster.ts's figures for processes;
 *  2. a rolling restart under the compose test's steady mixed load (test/support/steady-load.ts):
 *     answer times while each instance in turn is stopped (SIGTERM) and started again, against
 *     the same load in steady state, interleaved: steady, restart, steady, restart.
 * Targets: no request without an answer, no 502, and the p99 during a restart printed beside the
 * steady one (a ratio, no target: the first start of the images takes minutes on a new machine).
 *
 *   npm run bench -- cluster      (with bench/cluster.ts), or: npx tsx bench/cluster-compose.ts
 */
import { startComposeStack, TARGET_PORT, TARGET_ZONE, type ComposeStack } from '../test/support/compose-stack.js';
import { latencyQuantile, startSteadyLoad } from '../test/support/steady-load.js';
import { fmt, load, median, summarise, type LoadResult } from './support.js';

const STEADY_MS = Number(process.env.BENCH_SECONDS ?? 15) * 1_000;
const INSTANCES = ['observer-1', 'observer-2'];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Cached status through nginx for 3 s, 64 connections. */
const cachedRound = (url: string) => load(url, { seconds: 3, connections: 64 });

/**
 * Cached status answers per second through nginx with both instances, and with observer-2
 * stopped (nginx still lists it, as compose.yaml's nginx.conf does: now and then a request
 * waits out the 1 s connect timeout on its address before going to observer-1), interleaved.
 */
async function cachedStatus(stack: ComposeStack): Promise<void> {
  const url = `${stack.url}/api/v1/status/cached.${TARGET_ZONE}:${TARGET_PORT}`;
  const first = (await (await fetch(url)).json()) as { online?: boolean };
  if (!first.online) throw new Error('the target is not online through the cluster');
  await load(url, { seconds: 1, connections: 64 });
  const two: LoadResult[] = [];
  const one: LoadResult[] = [];
  for (let i = 0; i < 3; i += 1) {
    two.push(await cachedRound(url));
    await stack.compose('stop', '--timeout', '30', 'observer-2');
    one.push(await cachedRound(url));
    await stack.compose('start', 'observer-2');
    await stack.waitHealthy('observer-2');
    // Started afresh: warmed up as at the start, so that both figures are of warm instances.
    await load(url, { seconds: 1, connections: 64 });
  }
  const figures = (rounds: LoadResult[]) => ({
    rps: median(rounds.map((r) => r.requestsPerSecond)),
    p99: median(rounds.map((r) => r.latencyP99Ms)),
    bad: rounds.reduce((sum, r) => sum + r.non2xx + r.errors, 0),
  });
  const [a, b] = [figures(one), figures(two)];
  console.log('cached status through compose.yaml\'s nginx, instances in containers: 64 connections, 3 interleaved rounds of 3 s, median');
  console.log(`  nginx -> 1 instance (observer-2 stopped) : ${fmt(a.rps)} req/s (p99 ${fmt(a.p99)} ms, non-2xx or errors ${a.bad})`);
  console.log(`  nginx -> 2 instances                     : ${fmt(b.rps)} req/s (p99 ${fmt(b.p99)} ms, non-2xx or errors ${b.bad})`);
  console.log(`  scaling 1 -> 2 instances                 : ${fmt(b.rps / a.rps, 2)}x (load generator, nginx and instances share the cores)`);
  summarise(`cluster-compose: cached status through nginx, containers: 1 instance ${fmt(a.rps)} req/s, 2 instances ${fmt(b.rps)} req/s (${fmt(b.rps / a.rps, 2)}x)`);
}

/** A rolling restart as an operator makes it; the window it took, in the load's clock. */
async function rollingRestart(stack: ComposeStack, now: () => number): Promise<[number, number]> {
  const from = now();
  for (const service of INSTANCES) {
    await stack.compose('stop', '--timeout', '30', service);
    await stack.compose('start', service);
    await stack.waitHealthy(service);
  }
  return [from, now()];
}

async function restartUnderLoad(stack: ComposeStack): Promise<void> {
  const t0 = performance.now();
  const now = () => performance.now() - t0;
  const steady: Array<[number, number]> = [];
  const restarts: Array<[number, number]> = [];
  const running = startSteadyLoad(stack.url, { label: 'bench', serverName: (l, w, n) => `${l}-w${w}-n${n}.${TARGET_ZONE}:${TARGET_PORT}` });
  for (let round = 0; round < 2; round += 1) {
    const from = now();
    await sleep(STEADY_MS);
    steady.push([from, now()]);
    restarts.push(await rollingRestart(stack, now));
  }
  const tally = await running.stop();
  const quantile = (q: number, windows: Array<[number, number]>) =>
    median(windows.map(([from, to]) => latencyQuantile(tally, q, from, to)));
  const p99Steady = quantile(0.99, steady);
  const p99Restart = quantile(0.99, restarts);
  console.log('the compose test\'s steady mixed load (4 workers, 40 ms apart), 2 rounds of 15 s steady then a rolling restart, median of rounds');
  console.log(`  requests sent ${tally.sent}, answered by status ${JSON.stringify(tally.byStatus)}, without an answer ${tally.failed}`);
  console.log(`  steady state     : p50 ${fmt(quantile(0.5, steady), 1)} ms, p99 ${fmt(p99Steady, 1)} ms, longest ${fmt(quantile(1, steady))} ms`);
  console.log(`  rolling restart  : p50 ${fmt(quantile(0.5, restarts), 1)} ms, p99 ${fmt(p99Restart, 1)} ms, longest ${fmt(quantile(1, restarts))} ms (${fmt(median(restarts.map(([a, b]) => b - a)) / 1000, 1)} s each)`);
  console.log(`  p99 restart / steady: ${fmt(p99Restart / p99Steady, 2)}x`);
  summarise(`cluster-compose: p99 during a rolling restart ${fmt(p99Restart, 1)} ms against ${fmt(p99Steady, 1)} ms steady (${fmt(p99Restart / p99Steady, 2)}x); ${tally.failed} requests without an answer, ${tally.byStatus[502] ?? 0} 502s`);
  if (tally.failed > 0 || (tally.byStatus[502] ?? 0) > 0) throw new Error(`requests failed during the rolling restart: ${tally.unexpected.join('\n')}`);
}

const started = performance.now();
const stack = await startComposeStack();
console.log(`compose stack up in ${fmt((performance.now() - started) / 1000)} s (images built or taken from the cache)`);
try {
  await cachedStatus(stack);
  await restartUnderLoad(stack);
} finally {
  await stack.down();
}
