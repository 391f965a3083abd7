/**
 * A canned-bytes Java status server: answers every status request with one fixed response and
 * echoes the ping, doing as little work as a server can, so that the clients (or the service
 * in front of them), not the server, set the pace. Loopback only.
 *
 *   fork('bench/minimal-server.ts', ['--serve'])  → sends { port } to the parent once listening,
 *   and answers the message 'count' with { count }: status requests answered so far.
 */
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { encodeVarInt } from '../src/protocol/codec.js';

const HOST = '127.0.0.1';

/** The one status response every request gets: framed packet 0x00 with the JSON text. */
function cannedStatus(): Buffer {
  const json = JSON.stringify({
    version: { name: '1.21.1', protocol: 767 },
    players: { max: 100, online: 7, sample: [] },
    description: { text: 'Observer ', color: 'gold', extra: [{ text: 'bench', bold: true }] },
  });
  const text = Buffer.from(json);
  const body = Buffer.concat([Buffer.from([0x00]), encodeVarInt(text.length), text]);
  return Buffer.concat([encodeVarInt(body.length), body]);
}

export interface MinimalServer {
  server: net.Server;
  /** Status requests answered so far. */
  answered(): number;
}

export function startMinimalServer(port = 0): Promise<MinimalServer> {
  const status = cannedStatus();
  let answered = 0;
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    let buffered = Buffer.alloc(0);
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      // Frames: VarInt length, then the packet; every client frame here is shorter than 128 bytes.
      while (buffered.length > 0 && buffered.length >= 1 + (buffered[0] as number)) {
        const length = buffered[0] as number;
        const packet = buffered.subarray(1, 1 + length);
        buffered = buffered.subarray(1 + length);
        if (packet[0] === 0x00 && length === 1) {
          answered += 1;
          socket.write(status);
        }
        else if (packet[0] === 0x01) socket.end(Buffer.concat([Buffer.from([length]), packet]));
      }
    });
  });
  server.maxConnections = 10_000;
  return new Promise((resolve) => server.listen({ port, host: HOST, backlog: 4096 }, () => resolve({ server, answered: () => answered })));
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv.includes('--serve')) {
  const { server, answered } = await startMinimalServer();
  process.send?.({ port: (server.address() as net.AddressInfo).port });
  process.on('message', (message) => {
    if (message === 'count') process.send?.({ count: answered() });
  });
  process.on('disconnect', () => process.exit(0));
}
