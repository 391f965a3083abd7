/**
 * Per-client rate limits in three tiers (decisions.md), on top of @fastify/rate-limit
 * (memory store by default, Redis when given a client).
 *
 * The plugin emits the older draft headers (RateLimit-Limit/-Remaining/-Reset); an onSend
 * hook rewrites them into the current IETF structured fields
 * (draft-ietf-httpapi-ratelimit-headers):
 *   RateLimit-Policy: "status";q=120;w=60
 *   RateLimit: "status";r=87;t=42
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import type { ClientHasher } from '../core/client-hash.js';
import { ObserverError } from '../core/errors.js';
import { clientKeyOf } from './client-key.js';

export type RateTier = 'status' | 'general' | 'media';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Rate-limit tier of the route; routes without one are not limited. */
    tier?: RateTier;
  }
}

export interface RateLimitOptions {
  limits: Record<RateTier, number>;
  hasher: ClientHasher;
  redis?: Redis | null;
}

const WINDOW_MS = 60_000;

/** Route config for a tier: `{ config: routeTier('status', limits) }`. */
export function tierConfig(tier: RateTier, limits: Record<RateTier, number>) {
  return { tier, rateLimit: { max: limits[tier], timeWindow: WINDOW_MS } };
}

export async function registerRateLimit(app: FastifyInstance, options: RateLimitOptions): Promise<void> {
  await app.register(rateLimit, {
    global: false,
    timeWindow: WINDOW_MS,
    enableDraftSpec: true,
    // A Redis failure must not take the API down with it.
    skipOnError: true,
    ...(options.redis ? { redis: options.redis, nameSpace: 'observer:rl:' } : {}),
    // The key is a keyed hash of the client's network: no raw IP in memory maps or Redis keys.
    keyGenerator: (request: FastifyRequest) =>
      `${request.routeOptions.config.tier ?? 'general'}:${clientKeyOf(request, options.hasher)}`,
    errorResponseBuilder: (_request, context) =>
      new ObserverError(
        'rate_limited',
        429,
        `Rate limit exceeded: at most ${context.max} requests per minute. Retry in ${context.after}.`,
      ),
  });

  // Only routes with a tier carry rate-limit headers; others pay nothing for this hook.
  app.addHook('onRoute', (route) => {
    const tier = (route.config as { tier?: RateTier } | undefined)?.tier;
    if (tier === undefined) return;
    const existing = route.onSend === undefined ? [] : Array.isArray(route.onSend) ? route.onSend : [route.onSend];
    route.onSend = [...existing, ietfHeaders(tier)];
  });
}

/** Rewrites the plugin's draft headers into the IETF structured fields. */
function ietfHeaders(tier: RateTier) {
  return (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    const limit = reply.getHeader('ratelimit-limit');
    if (limit !== undefined) {
      const remaining = reply.getHeader('ratelimit-remaining') ?? 0;
      const reset = reply.getHeader('ratelimit-reset') ?? reply.getHeader('retry-after') ?? 60;
      reply.removeHeader('ratelimit-limit');
      reply.removeHeader('ratelimit-remaining');
      reply.removeHeader('ratelimit-reset');
      reply.header('RateLimit-Policy', `"${tier}";q=${String(limit)};w=${WINDOW_MS / 1000}`);
      reply.header('RateLimit', `"${tier}";r=${String(remaining)};t=${String(reset)}`);
    }
    done(null, payload);
  };
}
