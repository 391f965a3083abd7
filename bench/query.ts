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
import { compareClients, fmt } from './support.js';

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
    const bound = Object.fromEntries(Object.entries(clients).map(([name, client]) => [name, () => client(port)]));
    const { medians, failures } = await compareClients(bound, { concurrency, rounds: ROUNDS, seconds: ROUND_SECONDS });
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
