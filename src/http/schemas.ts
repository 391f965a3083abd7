/**
 * TypeBox schemas shared by routes: one schema validates a request, types the handler and
 * documents the endpoint in the OpenAPI document.
 */
import { Type, type Static } from 'typebox';
import { ERROR_MESSAGES, QUERY_ERROR_MESSAGES, VOTE_FAILURES, type VoteFailure } from '../core/errors.js';
import { VOTE_DEFAULTS } from '../vote/service.js';

export const ErrorResponse = Type.Object(
  {
    status: Type.Literal('error'),
    error: Type.Ref('ApiErrorCode'),
    message: Type.String({ description: 'Human-readable sentence saying what was wrong.' }),
  },
  { $id: 'ErrorResponse', additionalProperties: false, description: 'The body of every 4xx and 5xx response.' },
);
export type ErrorResponse = Static<typeof ErrorResponse>;

export const HealthResponse = Type.Object(
  {
    status: Type.Literal('OK'),
    timestamp: Type.String({ format: 'date-time' }),
    service: Type.String(),
    version: Type.String(),
    // Fields beyond status, timestamp, service and version: dependency states and the write
    // buffer (docs/operations.md, "Health").
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
    migration: Type.Optional(
      Type.Union(
        [
          Type.Null(),
          Type.Object(
            {
              name: Type.String({ description: 'The migration running.', examples: ['0003_history_layout'] }),
              progress: Type.Number({ minimum: 0, maximum: 1, description: 'The fraction of it done.' }),
            },
            { additionalProperties: false },
          ),
        ],
        {
          description:
            'The schema migration running after an upgrade, or null when none runs. Meanwhile status look-ups are answered ' +
            '(their checks buffered and written after), and history, trends, stats and watches answer 503 `migrating`; ' +
            'while the history is copied into a new layout, history, trends and stats answer from the previous one, marked stale.',
        },
      ),
    ),
  },
  {
    $id: 'HealthResponse',
    additionalProperties: false,
    description: 'Stays 200 while the instance can answer, whatever the state of its database and Redis.',
  },
);

/** `{address}` of the routes about one server. */
export const AddressParameter = Type.String({
  minLength: 1,
  maxLength: 255,
  description: 'host, host:port, IPv4, [IPv6]:port or IPv6',
  examples: ['play.example.net'],
});

/**
 * Boolean query flags: `true`/`false`, `1`/`0` and a bare `?flag` (true), read by
 * http/parameter-grammar.ts before validation; any other spelling is a 400.
 */
export const BooleanFlag = (description: string, defaultValue = false) =>
  Type.Boolean({ default: defaultValue, description });

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

const codeList = (codes: Readonly<Record<string, string>>) =>
  Object.entries(codes)
    .map(([code, message]) => `\`${code}\` (${message})`)
    .join(', ');

/**
 * A named enum of strings, as `anyOf` of constants: every generator types it as a union of
 * string literals (a named `enum` becomes a TypeScript `enum` in some, which a JSON value
 * cannot be assigned to).
 */
const LiteralUnion = (values: readonly string[], options: Record<string, unknown>) => Type.Union(values.map((value) => Type.Literal(value)), options);

/** `error_code` of an offline status: why its ping failed (docs/api.md, "Why a server is offline"). */
export const ErrorCode = LiteralUnion(Object.keys(ERROR_MESSAGES), {
  $id: 'ErrorCode',
  description: `Why the ping failed, beside the \`error\` sentence: ${codeList(ERROR_MESSAGES)}. Null when online.`,
});

/** `queryResult.error_code`: why the Query failed. */
export const QueryErrorCode = LiteralUnion(Object.keys(QUERY_ERROR_MESSAGES), {
  $id: 'QueryErrorCode',
  description: `Why the Query failed: the codes of \`ErrorCode\`, and \`query_unavailable\` where this instance cannot send a Query.`,
});

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
        }, { additionalProperties: false }),
        {
          description:
            'The formatted MOTD as runs of text with one style, exact colours included (hex colours of chat components ' +
            'and BungeeCord `§x` codes): what `html`, the banners and the widget are drawn from. Build your own markup ' +
            'from these rather than parsing `html`.',
        },
      ),
    ),
  },
  { $id: 'Motd', additionalProperties: false },
);

const Port = (description: string) => Type.Integer({ minimum: 0, maximum: 65535, description });

/** Fields a Java server adds to its status when it sends them (protocol/java.ts, protocol/forge.ts). */
const JavaExtras = {
  enforcesSecureChat: Type.Optional(Type.Boolean({ description: 'Java: the server requires signed chat.' })),
  previewsChat: Type.Optional(Type.Boolean({ description: 'Java (1.19 to 1.19.2): the server previews chat.' })),
  preventsChatReports: Type.Optional(Type.Boolean({ description: 'Java: a mod or plugin that prevents chat reports says so.' })),
  modLoader: Type.Optional(
    Type.Union([Type.Literal('fml1'), Type.Literal('forge'), Type.Literal('neoforge')], {
      description: 'Java: the mod loader of a modded server (`fml1`: Forge 1.7 to 1.12).',
    }),
  ),
  mods: Type.Optional(
    Type.Array(
      Type.Object(
        {
          id: Type.String(),
          version: Nullable(Type.String({ description: 'Null when the server does not say (server-side-only mods).' })),
        },
        { additionalProperties: false },
      ),
      { description: 'Java: the mods a Forge or NeoForge server lists (at most 1,024).' },
    ),
  ),
  modsTruncated: Type.Optional(Type.Literal(true, { description: 'Java: present when the server, or Observer past 1,024, cut the mod list short.' })),
};

/** Fields a Bedrock server adds to its advertisement when it sends them (protocol/bedrock.ts). */
const BedrockExtras = {
  edition: Type.Optional(Type.String({ description: 'Bedrock: `MCPE`, or `MCEE` for Education Edition.' })),
  serverGuid: Type.Optional(Type.String({ pattern: '^-?\\d{1,20}$', description: 'Bedrock: the server\'s GUID, in decimal.' })),
  levelName: Type.Optional(Type.String({ description: 'Bedrock: the MOTD\'s second line, the world name on vanilla servers.' })),
  gameMode: Type.Optional(Type.String({ description: 'Bedrock: e.g. `Survival`.' })),
  gameModeId: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
  portIPv4: Type.Optional(Port('Bedrock: the IPv4 port the server advertises.')),
  portIPv6: Type.Optional(Port('Bedrock: the IPv6 port the server advertises.')),
};

export const ServerStatus = Type.Object(
  {
    query: Type.Object(
      {
        host: Type.String({ description: 'Normalised host as queried.' }),
        port: Type.Integer({ description: 'Port queried: explicit, from the SRV record, or the default.' }),
        legacy: Type.Boolean(),
        bedrock: Type.Boolean(),
      },
      { additionalProperties: false },
    ),
    server_id: Nullable(Type.String({ format: 'uuid', description: 'UUID v5 of `edition:host:port`.' })),
    ip_address: Nullable(Type.String({ description: 'The checked IP the query went to.' })),
    icmp: Nullable(
      Type.Boolean({ description: 'One ICMP echo to `ip_address`; null where ICMP is not available.' }),
    ),
    online: Type.Boolean({ description: 'True when the Minecraft ping this body represents completed.' }),
    error: Nullable(Type.String({ description: 'Short, safe summary of a failed query, e.g. `timed out`.' })),
    error_code: Nullable(Type.Ref('ErrorCode')),
    version: Nullable(Type.Object({ name: Type.String(), protocol: Type.Integer() }, { additionalProperties: false })),
    players: Nullable(
      Type.Object({
        online: Type.Integer({ minimum: 0 }),
        max: Type.Integer({ minimum: 0 }),
        sample: Type.Array(
          Type.Object(
            {
              name: Type.String({ description: 'Player name as the server lists it (cleaned of control characters).' }),
              id: Type.String({ description: 'Player UUID as the server sends it; may be empty.' }),
            },
            { additionalProperties: false },
          ),
          { description: 'The players the server chooses to list (Java; empty on Bedrock and legacy).' },
        ),
      }, { additionalProperties: false }),
    ),
    motd: Nullable(Type.Ref('Motd')),
    favicon: Nullable(Type.String({ description: '`data:image/png;base64,...` when the server sends a valid one.' })),
    roundTripLatency: Nullable(Type.Number({ minimum: 0, description: 'Milliseconds.' })),
    stale: Type.Boolean({
      description:
        'True when this body is the last successful ping served instead of a fresh one (stale-while-revalidate, the ' +
        'service is saturated, or flap damping: then `failing` is set).',
    }),
    checked_at: Type.String({ format: 'date-time', description: 'Time of the ping this body represents.' }),
    srvRecord: Nullable(
      Type.Object(
        {
          name: Type.String({ description: 'The SRV name looked up, `_minecraft._tcp.<host>`.' }),
          target: Type.String({ description: 'Host name the record points at.' }),
          port: Type.Integer({ minimum: 1, maximum: 65535 }),
          priority: Type.Integer({ minimum: 0 }),
          weight: Type.Integer({ minimum: 0 }),
        },
        { additionalProperties: false, description: 'The SRV record the look-up followed; null without one.' },
      ),
    ),
    blocked: Type.Optional(
      Nullable(
        Type.Boolean({
          description:
            "Java only: on Mojang's blocked-servers list (host, `*.` parent domains, IPv4 `a.b.c.*` patterns, as the vanilla client checks); null while no list is loaded.",
        }),
      ),
    ),
    queryResult: Type.Optional(Type.Ref('QueryResult')),
    failing: Type.Optional(
      Type.Object(
        {
          since: Type.String({ format: 'date-time', description: 'Time of the first failed ping of the streak.' }),
          failures: Type.Integer({ minimum: 1, description: 'Failed pings in a row since the last success.' }),
          error: Nullable(Type.String({ description: 'The latest failure\'s `error`.' })),
          error_code: Nullable(Type.Ref('ErrorCode')),
        },
        {
          additionalProperties: false,
          description:
            'Only on a damped answer (flap damping): the server stopped answering after a recent success, and this body ' +
            'is that success (`stale: true`) until `DAMPING_FAILURES` failures in a row or `DAMPING_MINUTES` have passed.',
        },
      ),
    ),
    ...JavaExtras,
    ...BedrockExtras,
  },
  {
    $id: 'ServerStatus',
    additionalProperties: false,
    description:
      'One server\'s status, as `GET /status/{address}` answers it. The optional fields appear where a server sends ' +
      'them: on Java `enforcesSecureChat`, `previewsChat`, `preventsChatReports` and the Forge/NeoForge mod list; on ' +
      'Bedrock `edition`, `serverGuid`, `levelName`, `gameMode`, `gameModeId`, `portIPv4`, `portIPv6`. It never has ' +
      '`editions`, which tells it from an `EditionsStatus`.',
  },
);

/** Query (GS4 full stat) result: `queryResult` with `?query=true`. */
export const QueryResult = Type.Union(
  [
    Type.Object(
      {
        players: Type.Array(Type.String(), { description: 'Every player name the server lists (up to 1,000).' }),
        plugins: Type.Object(
          {
            name: Type.String({ description: 'Server software before the `:` of `plugins`; `vanilla` when empty.' }),
            list: Type.Array(Type.String(), { description: '`Name Version` entries after the `:`.' }),
          },
          { description: 'The `plugins` string parsed: `Paper on 1.20.4: WorldEdit 7.2; Vault 1.7`.' },
        ),
        software: Nullable(Type.String({ description: 'The `version` field, e.g. `1.20.4`.' })),
        map: Nullable(Type.String({ description: 'World (level) name.' })),
        gameType: Nullable(Type.String({ description: '`SMP` on Java servers.' })),
        gameId: Nullable(Type.String({ description: '`MINECRAFT` (Java) or `MINECRAFTPE` (Bedrock servers).' })),
        hostname: Nullable(Type.String({ description: 'The MOTD as Query sends it (vanilla loses non-Latin-1 characters).' })),
        playersOnline: Nullable(Type.Integer({ minimum: 0 })),
        playersMax: Nullable(Type.Integer({ minimum: 0 })),
        hostPort: Nullable(Type.Integer({ minimum: 1, maximum: 65535, description: 'Game port the server advertises.' })),
        hostIp: Nullable(Type.String({ description: 'Address the server advertises (`server-ip`), as sent.' })),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        error: Type.String({ description: 'Why the query failed: `timed out`, `connection refused`, `invalid response`, …' }),
        error_code: Type.Ref('QueryErrorCode'),
      },
      { additionalProperties: false },
    ),
  ],
  {
    $id: 'QueryResult',
    description:
      'Only with `?query=true`. The status fields stay as the ping gave them; a server with query disabled gives `{ "error": … }` and stays `online`.',
  },
);

/** `edition` of a status request (docs/lookups.md, "Both editions in one look-up"). */
export const EditionParameter = Type.Optional(
  Type.Enum(['java', 'bedrock', 'auto'], {
    description:
      '`java` (the default; with `legacy=true`, the legacy ping), `bedrock` (as `bedrock=true`), or `auto`: ask the Java ' +
      'and the Bedrock ping at once and answer an `EditionsStatus`. An explicit port applies to both editions. A flag ' +
      'that contradicts it (`auto` with `legacy` or `bedrock`, `java` with `bedrock`, `bedrock` with `legacy`) is a 400.',
  }),
);

/** The answer of `edition=auto`: which editions answered, and each edition's status. */
export const EditionsStatus = Type.Object(
  {
    query: Type.Object(
      {
        host: Type.String({ description: 'Normalised host as queried.' }),
        port: Nullable(Type.Integer({ minimum: 1, maximum: 65535, description: 'The explicit port, used by both editions; null without one.' })),
        edition: Type.Literal('auto'),
      },
      { additionalProperties: false },
    ),
    online: Type.Boolean({ description: 'True when at least one edition answered.' }),
    editions: Type.Array(Type.Union([Type.Literal('java'), Type.Literal('bedrock')]), {
      description: 'The editions whose ping completed (`online` in their status), Java first: what the server speaks.',
    }),
    java: Type.Ref('ServerStatus', { description: 'As `GET /status/{address}` answers (the same cache entry).' }),
    bedrock: Type.Ref('ServerStatus', { description: 'As `GET /status/{address}?bedrock=true` answers (the same cache entry).' }),
  },
  {
    $id: 'EditionsStatus',
    additionalProperties: false,
    description:
      'The answer of `edition=auto`: both editions\' statuses. Its required `editions` tells it from a `ServerStatus`, ' +
      'which never has that field (`\'editions\' in body`).',
  },
);

/** One bulk entry that could not be looked up: same codes as the single endpoint. */
export const BulkError = Type.Object(
  {
    address: Type.String({ description: 'The entry\'s `address`, as sent.' }),
    error: Type.Ref('ApiErrorCode', {
      description:
        'The code the single endpoint would answer: `invalid_address`, `invalid_query`, `target_refused`, `host_not_found`, ' +
        '`target_rate_limited`, `service_busy`, `overloaded`.',
    }),
    message: Type.String(),
  },
  {
    $id: 'BulkError',
    additionalProperties: false,
    description: 'A bulk entry that could not be looked up. Its required `message` tells it from a status (`\'message\' in entry`).',
  },
);

export const BulkRequest = Type.Object(
  {
    servers: Type.Array(
      Type.Object(
        {
          address: Type.String({ minLength: 1, maxLength: 255, description: 'As in `/status/{address}`.' }),
          bedrock: Type.Optional(Type.Boolean({ default: false })),
          legacy: Type.Optional(Type.Boolean({ default: false })),
          edition: EditionParameter,
          query: Type.Optional(Type.Boolean({ default: false, description: 'Also run a Query (`queryResult`).' })),
          queryPort: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 50 },
    ),
  },
  { $id: 'BulkRequest', additionalProperties: false },
);
export type BulkRequest = Static<typeof BulkRequest>;

export const BulkResponse = Type.Object(
  {
    results: Type.Array(Type.Union([Type.Ref('ServerStatus'), Type.Ref('EditionsStatus'), Type.Ref('BulkError')]), {
      description:
        'One per requested server, in the same order: a `ServerStatus`, an `EditionsStatus` (`edition: auto`; it has ' +
        '`editions`) or a `BulkError` (it has `message`).',
    }),
  },
  { $id: 'BulkResponse', additionalProperties: false },
);

/** `error_code` of a vote answer: why the vote was not taken (docs/votes.md). */
export const VoteErrorCode = Type.Unsafe<VoteFailure>(
  LiteralUnion(Object.keys(VOTE_FAILURES), { description: `Why the vote was not taken: ${codeList(VOTE_FAILURES)}. Null when it was.` }),
);

const VOTE_TOKEN_EXAMPLE = 'k4lb6ul3t3cbq9il0u1nq3dqhm';
const VOTE_KEY_EXAMPLE = 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA…IDAQAB';

export const VoteRequest = Type.Object(
  {
    host: Type.String({ minLength: 1, maxLength: 255, description: 'The Votifier\'s host name or IP address, without a port.', examples: ['play.example.net'] }),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, default: VOTE_DEFAULTS.port, description: 'The Votifier port (`port` in its config.yml). On a public address: 1024 to 65535.' })),
    username: Type.String({ pattern: '^[A-Za-z0-9_]{1,16}$', examples: ['Steve', 'Alex_01'], description: 'The player the vote is for: a Minecraft name, 1 to 16 letters, digits or `_`. Not stored.' }),
    service: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: '^[\\x20-\\x7e]+$',
        default: VOTE_DEFAULTS.service,
        description: 'The service name the vote says it comes from (printable ASCII); NuVotifier picks the token of this name, else its `default`.',
      }),
    ),
    address: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[\\x21-\\x7e]+$', default: VOTE_DEFAULTS.address, description: 'The voter\'s address the vote carries (printable ASCII, no space).' })),
    timestamp: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Milliseconds since the epoch; default: now.' })),
    token: Type.Optional(
      Type.String({ minLength: 1, maxLength: 256, description: 'NuVotifier\'s token (config.yml `tokens`): a v2 vote. Exactly one of `token` and `public_key`. Never stored, logged or shown.' }),
    ),
    public_key: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 4096,
        description: 'The server\'s Votifier public key (`rsa/public.key`, or PEM): a v1 vote. Exactly one of `token` and `public_key`. Never stored, logged or shown.',
      }),
    ),
  },
  {
    title: 'VoteRequest',
    additionalProperties: false,
    'x-examples': {
      nuvotifier: { summary: 'A v2 vote with NuVotifier\'s token', value: { host: 'play.example.net', username: 'Steve', token: VOTE_TOKEN_EXAMPLE } },
      votifier: { summary: 'A v1 vote with the public key', value: { host: 'play.example.net', port: 8193, username: 'Alex', service: 'MyServerList', public_key: VOTE_KEY_EXAMPLE } },
    },
  },
);
export type VoteRequest = Static<typeof VoteRequest>;

export const VoteAnswer = Type.Object(
  {
    sent: Type.Boolean({ description: 'True when the server took the vote: NuVotifier answered `ok`; a v1 server closed the connection after reading it.' }),
    version: Nullable(Type.Union([Type.Literal(1), Type.Literal(2)], { description: 'The protocol the server greeted with: 1 (Votifier) or 2 (NuVotifier, which takes v1 votes too); null without a Votifier greeting.' })),
    latency_ms: Nullable(Type.Number({ minimum: 0, description: 'From the vote written to its answer (or the close); null when no vote was written.' })),
    error_code: Nullable(VoteErrorCode),
    error: Nullable(Type.String({ description: 'What happened, in a sentence; null when the vote was taken.' })),
    server_status: Nullable(
      Type.Object(
        {
          status: Type.Union([Type.Literal('ok'), Type.Literal('error')]),
          cause: Nullable(Type.String({ description: 'The server\'s own cause (NuVotifier: the exception\'s class).' })),
          error: Nullable(Type.String({ description: 'The server\'s own message.' })),
        },
        { additionalProperties: false, description: 'What the server answered (NuVotifier answers v2 votes), its texts cleaned and cut to 200 characters; null when it answered nothing.' },
      ),
    ),
  },
  {
    $id: 'VoteAnswer',
    additionalProperties: false,
    examples: [
      { sent: true, version: 2, latency_ms: 3.1, error_code: null, error: null, server_status: { status: 'ok', cause: null, error: null } },
      {
        sent: false,
        version: 2,
        latency_ms: 2.4,
        error_code: 'bad_token',
        error: 'The server refused the vote\'s signature: the token is not the one it holds for this service.',
        server_status: { status: 'error', cause: 'CorruptedFrameException', error: 'Signature is not valid (invalid token?)' },
      },
      { sent: false, version: null, latency_ms: null, error_code: 'connection_refused', error: 'No connection could be made to this address and port before the deadline: …', server_status: null },
    ],
  },
);
