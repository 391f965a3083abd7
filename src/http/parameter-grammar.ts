/**
 * The one grammar of query and path parameters (docs/api.md, "Parameters"):
 *  - an integer is an optional sign and decimal digits: `64`, `-3`, `+7`;
 *  - a number adds an optional decimal fraction: `1.5`, `.5`;
 *  - a flag is `true`/`false`, `1`/`0`, or given bare (`?bedrock`, true).
 * Nothing else: no exponent, hex, spaces, `Infinity`, other spellings of a flag, or a
 * parameter given twice. Ajv's type coercion reads numbers with JavaScript's `Number()` (which
 * takes `0x10`, `6.4e1`, ` 64` and `Infinity`), so it is off (app.ts) and every such parameter
 * is read here, from the route's own schema, before validation: the text is turned into the
 * value its schema types, and the schema then checks its bounds. A text outside the grammar
 * fails like a validation would, as a 400 `invalid_parameter` naming the parameter and the
 * form it takes.
 */
import type { FastifyError, FastifyInstance, FastifyRequest, preValidationHookHandler } from 'fastify';

type Kind = 'integer' | 'number' | 'boolean';

interface Parameter {
  name: string;
  kind: Kind;
  minimum?: number;
  maximum?: number;
}

const FLAGS: Readonly<Record<string, boolean>> = { '': true, true: true, '1': true, false: false, '0': false };
const INTEGER = /^[+-]?[0-9]+$/;
const NUMBER = /^[+-]?([0-9]+(\.[0-9]+)?|\.[0-9]+)$/;

/** The value `text` stands for under the grammar of `kind`; undefined when it is outside it. */
export function readParameter(kind: Kind, text: string): number | boolean | undefined {
  if (kind === 'boolean') return Object.hasOwn(FLAGS, text) ? FLAGS[text] : undefined;
  if (!(kind === 'integer' ? INTEGER : NUMBER).test(text)) return undefined;
  const value = Number(text);
  // Digits beyond what a double holds exactly are outside every documented range.
  return (kind === 'integer' ? Number.isSafeInteger(value) : Number.isFinite(value)) ? value : undefined;
}

/** What a parameter of this kind accepts, as the end of a sentence naming it. */
export function parameterForm({ kind, minimum, maximum }: Omit<Parameter, 'name'>): string {
  if (kind === 'boolean') return 'must be true, false, 1 or 0, or given bare (true)';
  const range = minimum !== undefined && maximum !== undefined ? `, from ${minimum} to ${maximum}` : minimum !== undefined ? `, at least ${minimum}` : '';
  return kind === 'integer'
    ? `must be an integer in decimal digits with an optional sign${range}`
    : `must be a number in decimal digits with an optional sign and fraction${range}`;
}

/** The integer, number and boolean properties of a query or path schema. */
function typedParameters(schema: unknown): Parameter[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown; minimum?: number; maximum?: number }> } | undefined)?.properties ?? {};
  const found: Parameter[] = [];
  for (const [name, property] of Object.entries(properties)) {
    const { type, minimum, maximum } = property;
    if (type === 'integer' || type === 'number' || type === 'boolean') found.push({ name, kind: type, minimum, maximum });
  }
  return found;
}

/** A refusal shaped like Fastify's validation errors, so that every route answers it as one (errors.ts). */
function grammarError(context: 'querystring' | 'params', parameter: Parameter, form: string): FastifyError {
  const error = new Error(`${parameter.name} ${form}`) as FastifyError;
  Object.assign(error, {
    statusCode: 400,
    validationContext: context,
    validation: [{ instancePath: `/${parameter.name}`, keyword: 'grammar', message: form, params: {}, schemaPath: '' }],
  });
  return error;
}

/** Reads the typed parameters of `values` in place; the first one outside the grammar, as an error. */
function readAll(values: Record<string, unknown> | undefined, parameters: Parameter[], context: 'querystring' | 'params'): FastifyError | undefined {
  if (!values) return undefined;
  for (const parameter of parameters) {
    if (!Object.hasOwn(values, parameter.name)) continue;
    const text = values[parameter.name];
    if (typeof text !== 'string') return grammarError(context, parameter, `must be given once: ${parameterForm(parameter).replace(/^must be /, '')}`);
    const value = readParameter(parameter.kind, text);
    if (value === undefined) return grammarError(context, parameter, parameterForm(parameter));
    values[parameter.name] = value;
  }
  return undefined;
}

/** Puts the grammar before the validation of every route with integer, number or boolean parameters. */
export function registerParameterGrammar(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const query = typedParameters(route.schema?.querystring);
    const params = typedParameters(route.schema?.params);
    if (query.length === 0 && params.length === 0) return;
    const hook: preValidationHookHandler = function readParameters(request: FastifyRequest, _reply, done) {
      const refused =
        readAll(request.params as Record<string, unknown> | undefined, params, 'params') ??
        readAll(request.query as Record<string, unknown> | undefined, query, 'querystring');
      done(refused);
    };
    const existing = route.preValidation === undefined ? [] : Array.isArray(route.preValidation) ? route.preValidation : [route.preValidation];
    route.preValidation = [hook, ...existing];
  });
}
