/**
 * Query (GS4 full stat) look-ups per second: Observer's queryServer next to
 * minecraft-server-util's queryFull, same run, same UDP responder (the test responder serving
 * the vanilla 1.8 fixture, in a child process so it does not share an event loop with the
 * clients), at concurrency 1 and 32. Each look-up is the whole exchange: handshake, challenge,
 * full stat request, reply. Interleaved rounds; medians. Traffic goes to 127.0.0.1 only.
 *
 *   npx tsx bench/query.ts          (or: npm run bench -- query)
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import mcUtil from 'minecraft-server-util';
import { queryServer } from '../src/protocol/index.js';

const HOST = '127.0.0.1';
const ROUND_SECONDS = 2;
const ROUNDS = 3;
const CONCURRENCIES = [1, 32];

type Client = (port: number) => Promise<unknown>;

if (process.argv.includes('--serve')) {
  const { startQueryResponder } = await import('../test/protocol/query-responder.js');
  const { fixture } = await import('../test/protocol/fixtures.js');
  const responder = await startQueryResponder({ body: fixture('query-vanilla-1.8.hex'), host: HOST });
  process.send?.({ port: responder.port });
  process.on('disconnect', () => process.exit(0));
} else {
  await main();
}

async function main(): Promise<void> {
  const child = fork(fileURLToPath(import.meta.url), ['--serve'], { execArgv: process.execArgv, stdio: 'inherit' });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message) => resolve((message as { port: number }).port));
    child.once('exit', (code) => reject(new Error(`responder exited with ${code}`)));
  });
  const clients: Record<string, Client> = {
    'observer queryServer': (p) => queryServer({ ip: HOST, port: p, hostname: HOST, signal: AbortSignal.timeout(5000) }),
    'minecraft-server-util queryFull': (p) => mcUtil.queryFull(HOST, p, { enableSRV: false, timeout: 5000 }),
  };
  for (const [name, client] of Object.entries(clients)) {
    const result = (await client(port).catch((error: unknown) => {
      throw new Error(`${name} failed against the responder: ${String(error)}`);
    })) as { players?: unknown };
    if (!result.players) throw new Error(`${name} returned no players`);
  }
  console.log('== Query full stat (handshake → challenge → full stat) against a UDP responder in a child process');
  console.log(`${ROUNDS} interleaved rounds of ${ROUND_SECONDS} s per client and concurrency; median look-ups/s\n`);
  for (const concurrency of CONCURRENCIES) {
    for (const client of Object.values(clients)) await run(client, port, concurrency, 0.5);
    const rates: Record<string, number[]> = {};
    const failures: Record<string, number> = {};
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, client] of Object.entries(clients)) {
        const r = await run(client, port, concurrency, ROUND_SECONDS);
        (rates[name] ??= []).push(r.perSecond);
        failures[name] = (failures[name] ?? 0) + r.failed;
      }
    }
    const medians = Object.fromEntries(Object.entries(rates).map(([name, list]) => [name, median(list)]));
    console.log(`concurrency ${concurrency}`);
    for (const [name, value] of Object.entries(medians)) {
      console.log(`  ${name.padEnd(32)} ${fmt(value).padStart(8)} queries/s  (failed: ${failures[name]})`);
    }
    const ours = medians['observer queryServer'] as number;
    const baseline = medians['minecraft-server-util queryFull'] as number;
    console.log(`  ratio observer / minecraft-server-util: ${(ours / baseline).toFixed(2)}x\n`);
  }
  child.disconnect();
  child.kill();
}

async function run(client: Client, port: number, concurrency: number, seconds: number) {
  const start = performance.now();
  const end = start + seconds * 1000;
  let done = 0;
  let failed = 0;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      try {
        await client(port);
        done += 1;
      } catch {
        failed += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { perSecond: done / ((performance.now() - start) / 1000), failed };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

function fmt(n: number): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: 0 });
}
