/**
 * Boolean query flags, the way people write them: `?bedrock`, `?bedrock=true`, `?bedrock=1`
 * are true; `?bedrock=false`, `?bedrock=0` are false. Ajv coerces only `true`/`false`, so a
 * preValidation hook normalises the other spellings of every boolean query parameter first;
 * anything else stays as sent and the schema answers 400.
 */
import type { FastifyInstance, FastifyRequest, preValidationHookHandler } from 'fastify';

const SPELLINGS: Readonly<Record<string, boolean>> = { '': true, true: true, '1': true, false: false, '0': false };

/** true/false for the accepted spellings; the value unchanged otherwise. */
export function parseBooleanFlag(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const flag = SPELLINGS[value.toLowerCase()];
  return flag ?? value;
}

function booleanQueryParameters(schema: unknown): string[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> } | undefined)?.properties ?? {};
  return Object.entries(properties)
    .filter(([, property]) => property.type === 'boolean')
    .map(([name]) => name);
}

export function registerBooleanFlags(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const names = booleanQueryParameters(route.schema?.querystring);
    if (names.length === 0) return;
    const hook: preValidationHookHandler = (request: FastifyRequest, _reply, done) => {
      const query = request.query as Record<string, unknown> | undefined;
      if (query) for (const name of names) if (name in query) query[name] = parseBooleanFlag(query[name]);
      done();
    };
    const existing = route.preValidation === undefined ? [] : Array.isArray(route.preValidation) ? route.preValidation : [route.preValidation];
    route.preValidation = [hook, ...existing];
  });
}
