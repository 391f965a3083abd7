// Loopback ports nothing holds, for the servers the tests, benchmarks and scripts start (or
// for a closed port to connect to), taken below the kernel's ephemeral range. A port handed
// out by binding port 0 or to an outgoing socket (another test's server, a client's
// connection, a UDP ping) could be taken again before it is used; one below that range is
// only ever taken by a process that asks for it by number.
//
//   node scripts/ports.mjs    prints a free TCP port on 127.0.0.1
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

const FLOOR = 10_000;

async function unheldPort(tryBind) {
  const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
  const span = Math.max(1, (low ?? 32_768) - FLOOR);
  for (;;) {
    const port = FLOOR + Math.floor(Math.random() * span);
    if (await tryBind(port)) return port;
  }
}

/** A TCP port on `host` that nothing listens on. */
export function freePort(host = '127.0.0.1') {
  return unheldPort(
    (port) =>
      new Promise((resolve) => {
        const server = net.createServer();
        server.once('error', () => resolve(false));
        server.listen(port, host, () => server.close(() => resolve(true)));
      }),
  );
}

/** A UDP port on `host` that no socket is bound to. */
export function freeUdpPort(host = '127.0.0.1') {
  return unheldPort(
    (port) =>
      new Promise((resolve) => {
        const socket = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
        socket.once('error', () => {
          socket.close();
          resolve(false);
        });
        socket.bind(port, host, () => socket.close(() => resolve(true)));
      }),
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await freePort());
