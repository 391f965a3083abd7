import type { IncomingMessage } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { ClientHasher } from '../core/client-hash.js';

const KEY = Symbol('observer.clientKey');
const LOOKUP_KEY = Symbol('observer.lookupKey');

type Holder = { [KEY]?: string; [LOOKUP_KEY]?: string };

/**
 * The opaque key of the request's client (see ClientHasher), computed once per request: the
 * rate limiter and the distinct-client count use the same one. Kept on the raw request, so that
 * the fast status path (fast-status.ts) hands its key on when Fastify takes a request over.
 */
export function clientKeyOf(request: FastifyRequest, hasher: ClientHasher): string {
  const holder = request.raw as unknown as Holder;
  return (holder[KEY] ??= hasher.hash(request.ip));
}

/** The client's key for the trends and the new-server allowance (ClientHasher.lookupKey), once per request. */
export function lookupKeyOf(request: FastifyRequest, hasher: ClientHasher): string {
  const holder = request.raw as unknown as Holder;
  return (holder[LOOKUP_KEY] ??= hasher.lookupKey(request.ip));
}

export function rememberClientKey(raw: IncomingMessage, key: string): void {
  (raw as unknown as Holder)[KEY] = key;
}
