import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import net from 'node:net';

/**
 * Loopback ports nothing holds, taken below the kernel's ephemeral range: free for a child
 * process to listen on, or closed for a test to send to. A port handed out by binding port 0
 * or to an outgoing socket (another test's server, a client's connection, a UDP ping) could
 * be taken again before it is used; one below that range is only ever taken by a process
 * that asks for it by number.
 */
async function unheldPort(tryBind: (port: number) => Promise<boolean>): Promise<number> {
  const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
  const floor = 10_000;
  const span = Math.max(1, (low ?? 32_768) - floor);
  for (;;) {
    const port = floor + Math.floor(Math.random() * span);
    if (await tryBind(port)) return port;
  }
}

/** A TCP port on `host` that nothing listens on. */
export function freePort(host = '127.0.0.1'): Promise<number> {
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
export function freeUdpPort(host = '127.0.0.1'): Promise<number> {
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
