/**
 * One ping budget for every route. A route that may cause a ping (icon, banner, widget; the
 * status route is on the status tier already) hands the status service a `beforePing` hook:
 * the service calls it only when it is about to ping, so an answer from the cache stays on the
 * route's own tier (media) while every ping draws one unit of the client's status budget, the
 * background refresh of a stale answer included (refused, that refresh is skipped and the stale
 * answer is served all the same).
 * Spent, the hook throws the status tier's 429 (README "Rate limits").
 */
import type { FastifyRequest } from 'fastify';
import type { ClientHasher } from '../core/client-hash.js';
import type { LookupOptions } from '../status/types.js';
import { lookupKeyOf } from './client-key.js';
import type { TierCharger } from './rate-limit.js';

export function pingBudget(charge: TierCharger, request: FastifyRequest, admitPing: () => void): NonNullable<LookupOptions['beforePing']> {
  return () => {
    admitPing();
    return charge(request, 'status');
  };
}

/**
 * The look-up options of an image or widget request: its pings draw on the status budget, and
 * the look-up counts the client (its keyed hash, as the status route does) for the trends.
 */
export type MediaLookupOptions = (request: FastifyRequest) => LookupOptions;

export function mediaLookupOptions(charge: TierCharger, hasher: ClientHasher, admitPing: () => void): MediaLookupOptions {
  return (request) => ({ clientKey: lookupKeyOf(request, hasher), beforePing: pingBudget(charge, request, admitPing) });
}

/** Runs a render in one of the client's admission slots (http/admission.ts), or refuses it with 503. */
export type RenderGate = <T>(request: FastifyRequest, work: () => Promise<T>) => Promise<T>;

/** The OpenAPI sentence of every route that may ping on a cache miss. */
export const PING_BUDGET_NOTE =
  ' A look-up that needs a fresh ping draws one unit of the status rate limit (`RATE_LIMIT_STATUS`), ' +
  'as does the background refresh of a stale status; a cached status costs only this route\'s own limit. ' +
  'With the status budget spent, a look-up that needs a ping answers 429 JSON ' +
  '(`RateLimit-Policy: "status";…`, `Retry-After`) rather than a stand-in image; a stale status is still served, unrefreshed.';
