/**
 * Java status pings per second: Observer's pingJava next to minecraft-server-util and craftping,
 * same run, same server, at concurrency 1 and 64, with a bare `net.Socket` floor.
 * Targets: at concurrency 64 at least 1.5x the faster of the two, at least 0.85x the
 * bare-socket floor and 1.3x craftping; at concurrency 1 no slower.
 *
 *   npx tsx bench/protocol.ts          (or: npm run bench -- protocol)
 *
 * The minecraft-protocol 1.54.0 server runs in a child process (this file with `--serve`), so
 * that clients and server do not share an event loop. Every client does the full exchange:
 * handshake, status request, status response, ping, pong. Rounds are interleaved
 * (A, B, C, A, B, C, …) and bounded in time; each figure is the median of its rounds.
 * Traffic goes to 127.0.0.1 only.
 */
import { fork } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import mcUtil from 'minecraft-server-util';
import { encodeHandshake, encodePingRequest, encodeStatusRequest, pingJava } from '../src/protocol/index.js';
import { compareClients, fmt } from './support.js';

const HOST = '127.0.0.1';
const ROUND_SECONDS = 2;
const ROUNDS = 3;
const CONCURRENCIES = [1, 64];

type Client = (port: number) => Promise<unknown>;

interface CraftpingModule {
  JavaPingClient: new () => { ping(host: string, port: number, options: { signal: AbortSignal }): Promise<unknown> };
}
/** craftping ships no type declarations; a specifier held in a variable imports it untyped, then typed here. */
const CRAFTPING = 'craftping';

if (process.argv.includes('--serve')) {
  const { default: mc } = await import('minecraft-protocol');
  const server = mc.createServer({
    'online-mode': false,
    host: HOST,
    port: 0,
    motd: 'bench',
    maxPlayers: 100,
    hideErrors: true,
    beforePing: (response: Record<string, unknown>) => {
      response.description = { text: 'Observer ', color: 'gold', extra: [{ text: 'bench', bold: true }] };
      return response;
    },
  });
  server.on('listening', () => {
    const address = (server as unknown as { socketServer: { address(): { port: number } } }).socketServer.address();
    process.send?.({ port: address.port });
  });
  process.on('disconnect', () => process.exit(0));
} else {
  await main();
}

async function main(): Promise<void> {
  await compare('minecraft-protocol 1.54.0 server', fileURLToPath(import.meta.url));
  await compare('minimal status server (the clients set the pace)', fileURLToPath(new URL('./minimal-server.ts', import.meta.url)));
}

async function compare(serverName: string, serverScript: string): Promise<void> {
  const child = fork(serverScript, ['--serve'], { execArgv: process.execArgv, stdio: 'inherit' });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message) => resolve((message as { port: number }).port));
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });

  const craftping = (await import(CRAFTPING)) as CraftpingModule;
  const craft = new craftping.JavaPingClient();
  const clients: Record<string, Client> = {
    'observer pingJava': (p) => pingJava({ ip: HOST, port: p, hostname: HOST, signal: AbortSignal.timeout(5000) }),
    'minecraft-server-util': (p) => mcUtil.status(HOST, p, { enableSRV: false, timeout: 5000 }),
    craftping: (p) => craft.ping(HOST, p, { signal: AbortSignal.timeout(5000) }),
    // Reference, not a contender: the same exchange on a bare socket (framing only, no JSON,
    // no deadline, no checks). No Node client of this protocol can go much faster.
    'floor: bare net.Socket': (p) => bareSocketPing(p),
  };

  // Each client must really work against this server before it is timed.
  for (const [name, client] of Object.entries(clients)) {
    await client(port).catch((error: unknown) => {
      throw new Error(`${name} failed against the bench server: ${String(error)}`);
    });
  }

  console.log(`== Java status ping (handshake → status → ping/pong) against a ${serverName} in a child process`);
  console.log(`${ROUNDS} interleaved rounds of ${ROUND_SECONDS} s per client and concurrency; median pings/s\n`);
  for (const concurrency of CONCURRENCIES) {
    const bound = Object.fromEntries(Object.entries(clients).map(([name, client]) => [name, () => client(port)]));
    const { medians, failures, cpuMicrosPerCall } = await compareClients(bound, { concurrency, rounds: ROUNDS, seconds: ROUND_SECONDS });
    console.log(`concurrency ${concurrency}`);
    for (const [name, value] of Object.entries(medians)) {
      console.log(
        `  ${name.padEnd(22)} ${fmt(value).padStart(8)} pings/s  CPU ${fmt(cpuMicrosPerCall[name]!).padStart(4)} µs/ping  (failed: ${failures[name]})`,
      );
    }
    const ours = medians['observer pingJava'] as number;
    const floorTarget = concurrency === 64 ? ' (target >= 0.85)' : '';
    console.log(`  observer / bare-socket floor: ${(ours / (medians['floor: bare net.Socket'] as number)).toFixed(2)}x${floorTarget}`);
    const best = Math.max(medians['minecraft-server-util'] as number, medians.craftping as number);
    const target = concurrency === 1 ? '>= 1.00' : '>= 1.50';
    console.log(`  ratio observer / faster baseline: ${(ours / best).toFixed(2)}x (target ${target})`);
    console.log(
      `  ratios: vs minecraft-server-util ${(ours / (medians['minecraft-server-util'] as number)).toFixed(2)}x, ` +
        `vs craftping ${(ours / (medians.craftping as number)).toFixed(2)}x${concurrency === 64 ? ' (target >= 1.30)' : ''}\n`,
    );
  }
  child.disconnect();
  child.kill();
}

/** Handshake + status request, then ping; waits for two whole frames; framing is the only check. */
function bareSocketPing(port: number): Promise<void> {
  const request = Buffer.concat([encodeHandshake(HOST, port), encodeStatusRequest()]);
  const ping = encodePingRequest(1n);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: HOST, port, noDelay: true });
    let buffered = Buffer.alloc(0);
    let frames = 0;
    socket.on('connect', () => socket.write(request));
    socket.on('data', (chunk) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      for (;;) {
        let length = 0;
        let at = 0;
        for (; at < 5 && at < buffered.length; at++) {
          length |= ((buffered[at] as number) & 0x7f) << (7 * at);
          if (((buffered[at] as number) & 0x80) === 0) break;
        }
        if (at >= buffered.length || buffered.length < at + 1 + length) return;
        buffered = buffered.subarray(at + 1 + length);
        frames += 1;
        if (frames === 1) socket.write(ping);
        if (frames === 2) {
          socket.destroy();
          return resolve();
        }
      }
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error('closed early')));
  });
}

