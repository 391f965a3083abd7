/**
 * Keeps the front (fast-status.ts) honest about the Fastify hooks it stands in for. The front
 * answers plain status requests and health without Fastify's hooks, doing their work itself:
 * CORS headers, the refusal of a body, the request's record. A request hook added to the
 * application (or to the API's context) later, which the front does not know, would be
 * silently skipped for those requests; so the hooks buildApp adds there are watched, and at
 * start-up the front stays off, with a warning naming the hook, unless every one is known to it.
 */
/** The hooks the front does the work of, as `<hook>:<function name>`. */
export const FRONT_STANDS_IN_FOR: ReadonlySet<string> = new Set([
  'onRequest:corsHeaders',
  'onRequest:refuseUnexpectedBody',
  'onResponse:recordRequest',
  // Traces (tracing.ts): the front names the request's span itself; its requests have no body
  // to read, so their span is current throughout.
  'onRequest:traceRoute',
  'preHandler:resumeTrace',
]);

/** Hooks that run for a request (not the application's own life cycle). */
const REQUEST_HOOKS = new Set([
  'onRequest',
  'preParsing',
  'preValidation',
  'preHandler',
  'preSerialization',
  'onSend',
  'onResponse',
  'onError',
  'onTimeout',
  'onRequestAbort',
]);

type AddHook = (this: object, name: string, hook: (...args: never[]) => unknown) => object;

export class FrontHooks {
  private readonly watched = new Set<object>();
  private readonly added: string[] = [];
  private sealed = false;

  /** Watches the request hooks added to `instance` from now on (not those of its child contexts). */
  watch(instance: object): void {
    if (this.watched.size === 0) {
      // Child contexts inherit the method; only the watched instances' own hooks are noted.
      const addHook = (instance as { addHook: AddHook }).addHook;
      const added = this.added;
      const watched = this.watched;
      // eslint-disable-next-line @typescript-eslint/no-this-alias -- the wrapper below has its own `this` (the instance).
      const hooks = this;
      (instance as { addHook: AddHook }).addHook = function (this: object, name, hook) {
        if (!hooks.sealed && watched.has(this) && REQUEST_HOOKS.has(name)) added.push(`${name}:${hook.name || 'anonymous'}`);
        return addHook.call(this, name, hook);
      };
    }
    this.watched.add(instance);
  }

  /** Stops noting hooks: those added from here on are not the application's (a test's probes). */
  seal(): void {
    this.sealed = true;
  }

  /** The hooks added that the front does not stand in for. */
  unknown(): string[] {
    return this.added.filter((hook) => !FRONT_STANDS_IN_FOR.has(hook));
  }
}
