/**
 * The baseline for bench/service.ts: what a user would write in an afternoon instead of
 * Observer. Fastify 5 (logger off) + minecraft-server-util + lru-cache, names resolved with
 * node:dns against DNS_SERVERS. Prints `{"port":N}` once listening on 127.0.0.1.
 * With BASELINE_DNS=observer it asks what Observer asks of a name (its SRV record, A and
 * AAAA, at once), and connects as before to the first A answer: the DNS cost of an uncached
 * look-up is then the same on both sides.
 *
 *   DNS_SERVERS=127.0.0.1:5353 node bench/baseline/server.mjs
 */
import { isIP } from 'node:net';
import { Resolver } from 'node:dns/promises';
import Fastify from 'fastify';
import { LRUCache } from 'lru-cache';
import { status } from 'minecraft-server-util';

const resolver = new Resolver();
if (process.env.DNS_SERVERS) resolver.setServers(process.env.DNS_SERVERS.split(','));
const observerDns = process.env.BASELINE_DNS === 'observer';
const cache = new LRUCache({ max: 10_000, ttl: 60_000 });
const app = Fastify({ logger: false });

app.get('/api/v1/status', async () => ({
  status: 'OK',
  timestamp: new Date().toISOString(),
  service: 'baseline',
  version: '1.0.0',
}));

app.get('/api/v1/status/:address', async (request, reply) => {
  const address = request.params.address.toLowerCase();
  const cached = cache.get(address);
  if (cached) {
    reply.header('x-cache', 'HIT');
    return cached;
  }
  const [host, portText] = address.split(':');
  const port = portText ? Number(portText) : 25565;
  let body;
  try {
    const ip = isIP(host) ? host : (await addressesOf(host))[0];
    const s = await status(ip, port, { timeout: 5000, enableSRV: false });
    body = {
      online: true,
      host,
      port,
      ip_address: ip,
      version: s.version,
      players: s.players,
      motd: s.motd,
      favicon: s.favicon ?? null,
      roundTripLatency: s.roundTripLatency,
    };
  } catch (error) {
    body = { online: false, host, port, error: error instanceof Error ? error.message : String(error) };
  }
  cache.set(address, body);
  reply.header('x-cache', 'MISS');
  return body;
});

/** The name's A answers; with BASELINE_DNS=observer, asked beside its SRV and AAAA records. */
async function addressesOf(host) {
  if (!observerDns) return resolver.resolve4(host);
  const none = () => [];
  const [v4] = await Promise.all([resolver.resolve4(host), resolver.resolve6(host).catch(none), resolver.resolveSrv(`_minecraft._tcp.${host}`).catch(none)]);
  return v4;
}

await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(JSON.stringify({ port: app.server.address().port }) + '\n');
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
