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
