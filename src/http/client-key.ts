import type { IncomingMessage } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';
import type { FastifyRequest } from 'fastify';
import type { ClientHasher } from '../core/client-hash.js';

/**
 * The opaque key of the request's client (see ClientHasher), made once per connection and
 * address: the rate limiter and the distinct-client count use the same one.
 */
export function clientKeyOf(request: FastifyRequest, hasher: ClientHasher): string {
  return hasher.keysOf(request.raw.socket, request.ip).key;
}

/** The client's key for the trends and the new-server allowance (ClientHasher.lookupKey), likewise. */
export function lookupKeyOf(request: FastifyRequest, hasher: ClientHasher): string {
  return hasher.keysOf(request.raw.socket, request.ip).lookupKey;
}

/** Whose `X-Forwarded-For` is believed: what Fastify's `trustProxy` option is given. */
export type TrustProxy = false | ((address: string, hop: number) => boolean) | string[];

/**
 * The client's address of a raw request, as Fastify's `request.ip` gives it under the same
 * `trustProxy`. Behind a proxy it follows from the peer and the request's X-Forwarded-For
 * alone, so it is worked out again only when a connection's header differs from its last.
 */
export function clientAddress(trustProxy: TrustProxy): (req: IncomingMessage) => string {
  if (trustProxy === false) return (req) => req.socket.remoteAddress ?? '';
  const trust = typeof trustProxy === 'function' ? trustProxy : proxyAddr.compile(trustProxy);
  const lastOf = new WeakMap<object, { forwarded: string | string[] | undefined; address: string }>();
  return (req) => {
    const forwarded = req.headers['x-forwarded-for'];
    const last = lastOf.get(req.socket);
    if (last !== undefined && last.forwarded === forwarded) return last.address;
    const addresses = proxyAddr.all(req, trust);
    const address = addresses[addresses.length - 1] ?? '';
    lastOf.set(req.socket, { forwarded, address });
    return address;
  };
}
