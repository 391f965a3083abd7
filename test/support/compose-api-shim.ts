/**
 * podman's Docker-compatible API as docker-compose 1.29 can use it again after the first `up`:
 * a pass-through on a socket of its own, in front of `podman system service`'s socket.
 *
 * docker-compose 1.29 checks, before every `up`, that a network it finds matches the compose
 * file, and compares the network's IPAM options one by one. podman 4.3 reports the option
 * `driver: host-local` on every network it makes (compose never asked for it), so every `up`
 * on an existing network (a second `up`, `up --no-deps` to replace one instance) stops with
 * "Network … needs to be recreated - IPAM option "driver" has changed". The pass-through
 * leaves that one option out of network inspections; everything else passes unchanged, both
 * ways, streamed.
 */
import { request, createServer, type IncomingMessage, type Server } from 'node:http';

/** A network inspection (`GET /v1.x/networks/NAME`), the one answer rewritten. */
const NETWORK_INSPECTION = /^(\/v[\d.]+)?\/networks\/[^/?]+(\?.*)?$/;

function withoutIpamDriverOption(body: string): string {
  const network = JSON.parse(body) as { IPAM?: { Options?: Record<string, string> | null } };
  if (network.IPAM?.Options?.driver === 'host-local') delete network.IPAM.Options.driver;
  return JSON.stringify(network);
}

function rewrite(upstream: IncomingMessage, res: import('node:http').ServerResponse): void {
  let body = '';
  upstream.setEncoding('utf8');
  upstream.on('data', (chunk: string) => (body += chunk));
  upstream.on('end', () => {
    const text = upstream.statusCode === 200 ? withoutIpamDriverOption(body) : body;
    const headers = { ...upstream.headers, 'content-length': String(Buffer.byteLength(text)) };
    delete headers['transfer-encoding'];
    res.writeHead(upstream.statusCode ?? 502, headers);
    res.end(text);
  });
}

/** Listens on `socket`, passing every request on to podman's API at `podmanSocket`. */
export async function startComposeApiShim(socket: string, podmanSocket: string): Promise<Server> {
  const server = createServer((req, res) => {
    const forward = request({ socketPath: podmanSocket, method: req.method, path: req.url, headers: req.headers }, (upstream) => {
      if (req.method === 'GET' && NETWORK_INSPECTION.test(req.url ?? '')) return rewrite(upstream, res);
      res.writeHead(upstream.statusCode ?? 502, upstream.headers);
      upstream.pipe(res);
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  return server;
}
