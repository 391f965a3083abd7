import { readFileSync } from 'node:fs';
import net, { type AddressInfo, type Socket } from 'node:net';

/** A TCP server on loopback that accepts and never answers (the most common hostile case). */
export async function startSilentServer(host = '127.0.0.1') {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = net.createServer((socket) => {
    accepted += 1;
    sockets.add(socket);
    // Read (and drop) what the client sends, so its close is seen.
    socket.resume();
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    accepted: () => accepted,
    open: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * A loopback TCP port with nothing listening on it, taken below the kernel's ephemeral range:
 * a port handed out by `listen(0)` or to an outgoing connection (another test's server, a
 * client's socket) could be in use again by the time the test connects to it; one below that
 * range is only ever taken by a process that asks for it by number.
 */
export async function closedPort(host = '127.0.0.1'): Promise<number> {
  const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
  const floor = 10_000;
  const span = Math.max(1, (low ?? 32_768) - floor);
  for (;;) {
    const port = floor + Math.floor(Math.random() * span);
    const server = net.createServer();
    const free = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, host, () => resolve(true));
    });
    if (!free) continue;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
  }
}
