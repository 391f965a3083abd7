/**
 * 405 `method_not_allowed` with `Allow` for a known path asked with a method it does not serve
 * (docs/api.md, "Errors"); 404 stays for paths no route serves. The routes are noted as they
 * are registered, so the methods a path allows are always those of the routes it has.
 *
 * `GET /status/bulk` would otherwise be taken by `GET /status/{address}` as a look-up of the
 * host `bulk`: a route of its own answers it with the 405 of the path.
 */
import type { FastifyInstance } from 'fastify';
import { ObserverError } from '../core/errors.js';

/** The order methods are listed in `Allow`. */
const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route only answers that its path does not serve this method: not one of the path's methods. */
    refusesMethod?: boolean;
  }
}

interface KnownRoute {
  pattern: RegExp;
  /** A path without parameters or wildcards: it wins over patterns that also match. */
  exact: boolean;
  methods: Set<string>;
}

/** A route's URL as a pattern of paths: `:name` one segment, `*` anything. */
function patternOf(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment === '*' ? '.*' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\\\*/g, '.*')))
    .join('/');
  return new RegExp(`^${source}/?$`);
}

export class KnownPaths {
  private readonly routes = new Map<string, KnownRoute>();

  /** The paths of the routes `app` registers from now on. */
  static of(app: FastifyInstance): KnownPaths {
    const paths = new KnownPaths();
    paths.watch(app);
    return paths;
  }

  /** Notes every route `app` registers from now on (preflights, on every path, aside). */
  watch(app: FastifyInstance): void {
    app.addHook('onRoute', (route) => {
      if (route.config?.refusesMethod) return;
      const methods = (Array.isArray(route.method) ? route.method : [route.method]).filter((method) => method !== 'OPTIONS');
      if (methods.length === 0) return;
      let known = this.routes.get(route.url);
      if (known === undefined) {
        known = { pattern: patternOf(route.url), exact: !/[:*]/.test(route.url), methods: new Set() };
        this.routes.set(route.url, known);
      }
      for (const method of methods) known.methods.add(method);
    });
  }

  /** The methods `path` is served with (OPTIONS included), or none when no route has it. */
  allowed(path: string): string[] {
    const matching = [...this.routes.values()].filter((route) => route.pattern.test(path));
    if (matching.length === 0) return [];
    const exact = matching.filter((route) => route.exact);
    const methods = new Set((exact.length > 0 ? exact : matching).flatMap((route) => [...route.methods]));
    methods.add('OPTIONS');
    return METHOD_ORDER.filter((method) => methods.has(method));
  }
}

/** The 405 of a path served with `allowed`. */
export function methodNotAllowed(method: string, path: string, allowed: readonly string[]): ObserverError {
  return new ObserverError('method_not_allowed', 405, `${method} is not served on ${path.slice(0, 200)}; it is served with ${allowed.join(', ')}.`, {
    headers: { Allow: allowed.join(', ') },
  });
}

/** `GET /status/bulk` (and its HEAD): the 405 of the bulk path, not a look-up of the host `bulk`. */
export function registerBulkPathRefusal(api: FastifyInstance, paths: KnownPaths, config: Record<string, unknown>): void {
  api.get('/status/bulk', { schema: { hide: true }, config: { ...config, refusesMethod: true } }, async (request) => {
    const path = request.url.split('?', 1)[0] ?? '';
    throw methodNotAllowed(request.method, path, paths.allowed(path));
  });
}
