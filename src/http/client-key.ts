import type { FastifyRequest } from 'fastify';
import type { ClientHasher } from '../core/client-hash.js';

const KEY = Symbol('observer.clientKey');

/**
 * The opaque key of the request's client (see ClientHasher), computed once per request: the
 * rate limiter and the distinct-client count use the same one.
 */
export function clientKeyOf(request: FastifyRequest, hasher: ClientHasher): string {
  const holder = request as unknown as { [KEY]?: string };
  return (holder[KEY] ??= hasher.hash(request.ip));
}
