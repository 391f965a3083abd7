/**
 * TypeBox schemas shared by routes: one schema validates a request, types the handler and
 * documents the endpoint in the OpenAPI document.
 */
import { Type, type Static } from 'typebox';

export const ErrorResponse = Type.Object(
  {
    status: Type.Literal('error'),
    error: Type.String({ description: 'Stable machine-readable error code, e.g. `invalid_parameter`.' }),
    message: Type.String({ description: 'Human-readable sentence saying what was wrong.' }),
  },
  { $id: 'ErrorResponse', additionalProperties: true, description: 'The body of every 4xx and 5xx response.' },
);
export type ErrorResponse = Static<typeof ErrorResponse>;

export const HealthResponse = Type.Object(
  {
    status: Type.Literal('OK'),
    timestamp: Type.String({ format: 'date-time' }),
    service: Type.String(),
    version: Type.String(),
  },
  { $id: 'HealthResponse' },
);

/** Boolean query flags: `true`/`false` and `1`/`0` (Ajv coerces them). */
export const BooleanFlag = (description: string, defaultValue = false) =>
  Type.Boolean({ default: defaultValue, description });

/** Responses shared by every rate-limited route. */
export const errorResponses = {
  400: Type.Ref('ErrorResponse'),
  429: Type.Ref('ErrorResponse'),
} as const;
