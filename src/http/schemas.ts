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
    // Extra fields (decisions.md allows dependency states and the write-buffer length).
    database: Type.Optional(
      Type.Union([Type.Literal('ok'), Type.Literal('degraded'), Type.Literal('down')], {
        description: 'History database: `degraded` while writes queue in the buffer, `down` while it is unreachable.',
      }),
    ),
    redis: Type.Optional(
      Type.Union([Type.Literal('ok'), Type.Literal('degraded'), Type.Literal('down'), Type.Literal('disabled')], {
        description:
          'Shared Redis: `degraded` after failed commands, `down` while the instance runs on its local cache, ' +
          'rate limits and coalescing; `disabled` without REDIS_URL.',
      }),
    ),
    write_buffer: Type.Optional(Type.Integer({ minimum: 0, description: 'History writes waiting for the database.' })),
    write_buffer_dropped: Type.Optional(
      Type.Integer({ minimum: 0, description: 'History writes dropped because the buffer was full, since start.' }),
    ),
  },
  {
    $id: 'HealthResponse',
    description: 'Stays 200 while the instance can answer, whatever the state of its database and Redis.',
  },
);

/**
 * Boolean query flags: `true`/`false`, `1`/`0` and a bare `?flag` (true). Ajv coerces only
 * `true`/`false`; http/boolean-flags.ts normalises the other spellings before validation.
 */
export const BooleanFlag = (description: string, defaultValue = false) =>
  Type.Boolean({ default: defaultValue, description });

/** Responses shared by every rate-limited route. */
export const errorResponses = {
  400: Type.Ref('ErrorResponse'),
  429: Type.Ref('ErrorResponse'),
} as const;

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

export const Motd = Type.Object(
  {
    raw: Type.String({ description: 'With § formatting codes (JSON chat components converted to them).' }),
    clean: Type.String({ description: 'Formatting codes removed.' }),
    html: Type.String({ description: 'Escaped HTML spans with colours (named and hex) and styles.' }),
    raw_lines: Type.Array(Type.String()),
    clean_lines: Type.Array(Type.String()),
    segments: Type.Optional(
      Type.Array(
        Type.Object({
          text: Type.String(),
          color: Type.Union([Type.String({ pattern: '^#[0-9a-f]{6}$' }), Type.Null()], { description: '`#rrggbb`, or null for the default colour.' }),
          bold: Type.Boolean(),
          italic: Type.Boolean(),
          underlined: Type.Boolean(),
          strikethrough: Type.Boolean(),
          obfuscated: Type.Boolean(),
        }),
        {
          description:
            'The formatted MOTD as runs of text with one style, exact colours included (hex colours of chat components ' +
            'and BungeeCord `§x` codes): what `html`, the banners and the widget are drawn from. Build your own markup ' +
            'from these rather than parsing `html`.',
        },
      ),
    ),
  },
  { $id: 'Motd' },
);

export const ServerStatus = Type.Object(
  {
    query: Type.Object({
      host: Type.String({ description: 'Normalised host as queried.' }),
      port: Type.Integer({ description: 'Port queried: explicit, from the SRV record, or the default.' }),
      legacy: Type.Boolean(),
      bedrock: Type.Boolean(),
    }),
    server_id: Nullable(Type.String({ format: 'uuid', description: 'UUID v5 of `edition:host:port`.' })),
    ip_address: Nullable(Type.String({ description: 'The checked IP the query went to.' })),
    icmp: Nullable(
      Type.Boolean({ description: 'One ICMP echo to `ip_address`; null where ICMP is not available.' }),
    ),
    online: Type.Boolean({ description: 'True when the Minecraft ping this body represents completed.' }),
    error: Nullable(Type.String({ description: 'Short, safe summary of a failed query, e.g. `timed out`.' })),
    version: Nullable(Type.Object({ name: Type.String(), protocol: Type.Integer() })),
    players: Nullable(
      Type.Object({
        online: Type.Integer({ minimum: 0 }),
        max: Type.Integer({ minimum: 0 }),
        sample: Type.Array(Type.Object({}, { additionalProperties: true })),
      }),
    ),
    motd: Nullable(Type.Ref('Motd')),
    favicon: Nullable(Type.String({ description: '`data:image/png;base64,...` when the server sends a valid one.' })),
    roundTripLatency: Nullable(Type.Number({ minimum: 0, description: 'Milliseconds.' })),
    stale: Type.Boolean({
      description:
        'True when this body is the last successful ping served instead of a fresh one (stale-while-revalidate, or the service is saturated).',
    }),
    checked_at: Type.String({ format: 'date-time', description: 'Time of the ping this body represents.' }),
    srvRecord: Nullable(Type.Object({}, { additionalProperties: true })),
  },
  {
    $id: 'ServerStatus',
    additionalProperties: true,
    description:
      'Extra fields appear where a server sends them: Bedrock `edition`, `serverGuid`, `levelName`, `gameMode`, ' +
      '`gameModeId`, `portIPv4`, `portIPv6`; Java `enforcesSecureChat`, Forge/NeoForge mod lists.',
  },
);
