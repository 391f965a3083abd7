/**
 * Images: /icon/dynamic, /icon/sharp, /banner/{address} and /banner/motd. Images are drawn by
 * src/render from the StatusService's answer (never an HTTP call to ourselves), cached by what
 * they depend on (server id, check time, parameters) and bounded by bytes; every image carries
 * an ETag derived from that key, so conditional requests get a 304 without rendering.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import type { Config } from '../../config/index.js';
import { BadRequestError, HostNotFoundError } from '../../core/errors.js';
import { unknownHostStatus, type QueryMode, type ServerStatus } from '../../core/types.js';
import {
  BANNER_SIZES,
  BORDER_RADIUS,
  DEFAULT_BANNER_OPTIONS,
  DYNAMIC_ICON_SIZE,
  MAX_MOTD_PARAMETER_LENGTH,
  RenderCache,
  SHARP_ICON_SIZE,
  digestOf,
  etagOf,
  matchesIfNoneMatch,
  parseHexColor,
  registerRenderFonts,
  type BannerOptions,
  type RenderPool,
  type IconOptions,
} from '../../render/index.js';
import { parseAddress, parseQueryMode, queryEcho } from '../../resolve/index.js';
import type { LookupOptions, StatusLookup } from '../../status/types.js';
import { PING_BUDGET_NOTE, type MediaLookupOptions, type RenderGate } from '../ping-budget.js';
import { tierConfig } from '../rate-limit.js';
import { binary, empty, errorResponses, headers, withPathParameters, type RouteErrors } from '../contract.js';
import { AddressParameter, BooleanFlag } from '../schemas.js';

/** Spec: icons are cached 1 day by browsers, 7 days by CDNs. */
const ICON_CACHE_CONTROL = 'public, max-age=86400, s-maxage=604800';

export const HexColor = (description: string, example: string) =>
  Type.String({
    pattern: '^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$',
    description: `${description}: #RGB or #RRGGBB, with or without the # (sent as %23).`,
    examples: [example],
  });

const ADDRESS_DESCRIPTION = 'host, host:port, IPv4, [IPv6]:port or IPv6';
export const Address = AddressParameter;

/**
 * `/icon/sharp` requires `address`; `/icon/dynamic` takes `address` or its alias `server`, so
 * neither is required alone there and the schema requires one of the two (`anyOf`).
 */
const IconQuery = (size: { min: number; max: number; default: number }, withAlias: boolean) =>
  Type.Object(
    {
      address: withAlias ? Type.Optional({ ...Address, description: `${ADDRESS_DESCRIPTION}. Required unless \`server\` is given.` }) : Address,
      ...(withAlias ? { server: Type.Optional({ ...Address, description: 'Backwards-compatible alias of `address`.' }) } : {}),
      size: Type.Integer({ minimum: size.min, maximum: size.max, default: size.default, description: `Side in pixels, ${size.min} to ${size.max}.` }),
      ...(withAlias
        ? { format: Type.Union([Type.Literal('png'), Type.Literal('webp')], { default: 'png', description: '`png` or `webp`.' }) }
        : {}),
      bedrock: BooleanFlag('Bedrock protocol.'),
      legacy: BooleanFlag('Legacy Java protocol.'),
    },
    withAlias ? { anyOf: [{ required: ['address'] }, { required: ['server'] }] } : {},
  );

/** What an image route about a server can refuse: its address, its limits, a ping or render under load. */
export const SERVER_IMAGE_ERRORS: RouteErrors = {
  400: ['invalid_address', 'invalid_query', 'invalid_parameter', 'target_refused'],
  429: ['rate_limited', 'target_rate_limited'],
  503: ['service_busy', 'overloaded'],
};

/**
 * The responses of an image route: the image in `mediaTypes`, a 304, and its errors as JSON.
 * `limited`: the route is charged to the media tier.
 */
export const imageResponses = (mediaTypes: readonly string[], errors: RouteErrors = SERVER_IMAGE_ERRORS, limited = true) => ({
  200: binary(`The image (${mediaTypes.join(' or ')}).`, mediaTypes, headers('Cache-Control!', 'ETag!', 'X-Render-Cache!', ...(limited ? (['RateLimit-Policy'] as const) : []))),
  304: empty('Not modified: the `If-None-Match` ETag still names this image.', headers('Cache-Control!', 'ETag!', ...(limited ? (['RateLimit-Policy'] as const) : []))),
  ...errorResponses(errors, { limited }),
});

/**
 * The status to draw. A name with no DNS records is drawn as an offline server (the image
 * endpoints document 400 and 429 only); invalid and refused addresses stay 400s. That
 * stand-in has no check time (`checked_at: ''`): its image depends on the name alone, so it
 * has one cache entry and one ETag instead of a new one per request.
 */
export async function statusFor(
  status: StatusLookup,
  address: string,
  mode: QueryMode,
  notFoundMaxAge: number,
  options: LookupOptions,
): Promise<{ status: ServerStatus; maxAge: number }> {
  try {
    const answer = await status.lookup(address, mode, options);
    return { status: answer.status, maxAge: answer.maxAgeSeconds };
  } catch (error) {
    if (!(error instanceof HostNotFoundError)) throw error;
    return { status: unknownHostStatus(queryEcho(parseAddress(address), mode)), maxAge: notFoundMaxAge };
  }
}

/**
 * A cached status answer is the same object on every hit: hash its favicon once, not on every
 * request (a favicon is up to 1 MiB of base64).
 */
const faviconDigests = new WeakMap<ServerStatus, string>();
function faviconKey(s: ServerStatus): string {
  if (!s.online || !s.favicon) return 'default';
  let digest = faviconDigests.get(s);
  if (digest === undefined) {
    digest = digestOf(s.favicon);
    faviconDigests.set(s, digest);
  }
  return digest;
}


function color(value: string | undefined, fallback: string): string {
  return value === undefined ? fallback : (parseHexColor(value) ?? fallback);
}

interface ImageRouteOptions {
  status: StatusLookup;
  config: Config;
  lookupOptions: MediaLookupOptions;
  renderGate: RenderGate;
  /** Where images are drawn (src/render/pool.ts). */
  renders: RenderPool;
  cache?: RenderCache;
}

/** An image to send: what it is keyed by, its type and caching, and how to draw it. */
interface ImageSpec {
  key: string;
  contentType: string;
  cacheControl: string;
  render: () => Promise<Buffer>;
}

type SendImage = (request: FastifyRequest, reply: FastifyReply, image: ImageSpec) => Promise<FastifyReply>;

/**
 * Sends the image of `spec.key`, or 304. The ETag is derived from the key, so `If-None-Match`
 * is compared before anything is rendered: a revalidation costs a status look-up, no render.
 */
function imageSender(cache: RenderCache, renderGate: RenderGate, renders: RenderPool): SendImage {
  return async (request, reply, image) => {
    const etag = etagOf(image.key);
    reply.header('Cache-Control', image.cacheControl).header('ETag', etag);
    if (matchesIfNoneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send(null);
    // A render not in the cache needs an admission slot (http/admission.ts), taken once a render
    // thread runs: renders queued behind the first are not refused for the thread's start.
    const { image: rendered, hit } = await cache.getOrRender(image.key, image.contentType, async () => {
      await renders.started();
      return renderGate(request, image.render);
    });
    return reply.header('X-Render-Cache', hit ? 'HIT' : 'MISS').type(rendered.contentType).send(rendered.body);
  };
}

export const imageRoutes: FastifyPluginAsyncTypebox<ImageRouteOptions> = async (app, options) => {
  registerRenderFonts();
  const send = imageSender(options.cache ?? new RenderCache(), options.renderGate, options.renders);
  registerIconRoutes(app, options, send);
  registerMotdBanner(app, options.renders, send);
  registerStatusBanner(app, options, send);
};

type ImageApp = Parameters<FastifyPluginAsyncTypebox>[0];
type IconQueryValues = { address?: string; server?: string; legacy: boolean; bedrock: boolean };

type SendIcon = (request: FastifyRequest, reply: FastifyReply, query: IconQueryValues, options: IconOptions) => Promise<FastifyReply>;

/** Sends the icon of the server the query names: its favicon, or the default icon. */
function iconSender({ status, config, lookupOptions, renders }: ImageRouteOptions, send: SendImage): SendIcon {
  return async (request, reply, query, options) => {
    const address = query.address ?? query.server;
    if (address === undefined) throw new BadRequestError('invalid_parameter', 'The query parameter "address" is required.');
    const mode = parseQueryMode(query.legacy, query.bedrock);
    const { status: s, maxAge } = await statusFor(status, address, mode, config.statusCacheTtlSeconds, lookupOptions(request));
    const favicon = s.online ? s.favicon : null;
    return send(request, reply, {
      // Keyed by the favicon's digest: every server with the default icon shares one render.
      key: `icon|${faviconKey(s)}|${options.size}|${options.format}|${options.rounded}`,
      contentType: `image/${options.format}`,
      // The default icon standing in for an offline or unknown server lasts as long as that
      // status does, so the real icon shows once the server is back.
      cacheControl: s.online ? ICON_CACHE_CONTROL : `public, max-age=${maxAge}`,
      render: () => renders.icon(favicon, options),
    });
  };
}

/** GET /icon/dynamic and /icon/sharp: the server's favicon, or the default icon. */
function registerIconRoutes(app: ImageApp, options: ImageRouteOptions, send: SendImage): void {
  const icon = iconSender(options, send);
  app.get(
    '/icon/dynamic',
    {
      config: tierConfig('media'),
      schema: {
        operationId: 'getServerIcon',
        summary: 'Server icon',
        description:
          "The server's favicon at `size` pixels (enlarged with nearest-neighbour, so pixel art stays crisp), or " +
          "Observer's default icon when the server has none, is offline or unknown. `server` is accepted as an alias of `address`. " +
          'Cached 1 day by browsers and 7 days by CDNs, except the default icon standing in for an offline or unknown server, ' +
          'which is cached only as long as that status stays fresh.' +
          PING_BUDGET_NOTE,
        tags: ['images'],
        security: [],
        querystring: IconQuery(DYNAMIC_ICON_SIZE, true),
        response: imageResponses(['image/png', 'image/webp']),
      },
    },
    async (request, reply) => {
      const q = request.query as IconQueryValues & { size: number; format?: 'png' | 'webp' };
      return icon(request, reply, q, { size: q.size, format: q.format ?? 'png', rounded: false });
    },
  );

  app.get(
    '/icon/sharp',
    {
      config: tierConfig('media'),
      schema: {
        operationId: 'getRoundedServerIcon',
        summary: 'Rounded server icon',
        description: "The server's favicon (or the default icon) as a PNG with rounded, transparent corners." + PING_BUDGET_NOTE,
        tags: ['images'],
        security: [],
        querystring: IconQuery(SHARP_ICON_SIZE, false),
        response: imageResponses(['image/png']),
      },
    },
    async (request, reply) => {
      const q = request.query as IconQueryValues & { size: number };
      return icon(request, reply, q, { size: q.size, format: 'png', rounded: true });
    },
  );
}

/** GET /banner/motd: formatted text drawn as a banner, without any server. */
function registerMotdBanner(app: ImageApp, renders: RenderPool, send: SendImage): void {
  app.get(
    '/banner/motd',
    {
      schema: {
        operationId: 'getMotdBanner',
        summary: 'MOTD banner',
        description:
          'Renders Minecraft-formatted text (`§` or `&` codes) as an 800x180 PNG without querying any server. ' +
          'Not rate-limited per minute; each distinct text and colour pair is rendered once and kept in the render cache once asked for twice, ' +
          'and the ETag lets clients revalidate. A new render is refused with 503 `overloaded` (and `Retry-After`) while the render slots are full.',
        tags: ['images'],
        security: [],
        querystring: Type.Object({
          motd: Type.String({ minLength: 1, maxLength: MAX_MOTD_PARAMETER_LENGTH, description: 'MOTD text, at most 300 characters.' }),
          textColor: Type.Optional(HexColor('Default text colour', '#FFFFFF')),
          accentColor: Type.Optional(HexColor('Background accent colour', '#10B981')),
        }),
        response: imageResponses(['image/png'], { 400: ['invalid_parameter'], 503: ['overloaded'] }, false),
      },
    },
    async (request, reply) => {
      const q = request.query;
      const options = { textColor: color(q.textColor, '#ffffff'), accentColor: color(q.accentColor, '#10b981') };
      // Keyed by its parameters: the same text costs one render, however often it is asked for.
      return send(request, reply, {
        key: `motd|${digestOf(q.motd)}|${options.textColor}|${options.accentColor}`,
        contentType: 'image/png',
        cacheControl: 'public, max-age=86400',
        render: () => renders.motdBanner(q.motd, options),
      });
    },
  );
}

const BannerQuery = Type.Object({
  size: Type.Union([Type.Literal('small'), Type.Literal('normal'), Type.Literal('large')], { default: 'normal' }),
  style: Type.Union([Type.Literal('modern'), Type.Literal('classic')], { default: 'modern' }),
  textColor: Type.Optional(HexColor('Primary text colour', '#FFFFFF')),
  accentColor: Type.Optional(HexColor('Player-count accent colour', '#10B981')),
  showFavicon: BooleanFlag('Draw the server icon.', true),
  showMotd: BooleanFlag('Draw the MOTD.', true),
  showPing: BooleanFlag('Draw the latency.', true),
  borderRadius: Type.Number({
    minimum: BORDER_RADIUS.min,
    maximum: BORDER_RADIUS.max,
    default: BORDER_RADIUS.default,
    description: `Corner radius multiplier, ${BORDER_RADIUS.min} to ${BORDER_RADIUS.max}: 1 is ${BORDER_RADIUS.unitPx} px at the normal size.`,
  }),
  bedrock: BooleanFlag('Bedrock protocol.'),
  legacy: BooleanFlag('Legacy Java protocol.'),
});

/** The banner's drawing options from its query. */
function bannerOptions(q: Static<typeof BannerQuery>): BannerOptions {
  return {
    size: q.size,
    style: q.style,
    textColor: color(q.textColor, DEFAULT_BANNER_OPTIONS.textColor),
    accentColor: color(q.accentColor, DEFAULT_BANNER_OPTIONS.accentColor),
    showFavicon: q.showFavicon,
    showMotd: q.showMotd,
    showPing: q.showPing,
    borderRadius: q.borderRadius,
  };
}

/** GET /banner/{address}: the server's status drawn as a banner. */
function registerStatusBanner(app: ImageApp, { status, config, lookupOptions, renders }: ImageRouteOptions, send: SendImage): void {
  app.get(
    '/banner/:address',
    {
      config: tierConfig('media'),
      schema: {
        operationId: 'getServerBanner',
        summary: 'Status banner',
        description:
          'A PNG banner with the server name, player count (in the accent colour), MOTD, latency and favicon; an offline ' +
          `server gets an offline banner. Sizes: small ${BANNER_SIZES.small.width}x${BANNER_SIZES.small.height}, normal ` +
          `${BANNER_SIZES.normal.width}x${BANNER_SIZES.normal.height}, large ${BANNER_SIZES.large.width}x${BANNER_SIZES.large.height}. ` +
          '`Cache-Control: max-age` follows the freshness of the status it shows.' +
          PING_BUDGET_NOTE,
        tags: ['images'],
        security: [],
        params: Type.Object({ address: Address }),
        querystring: BannerQuery,
        response: imageResponses(['image/png'], withPathParameters(SERVER_IMAGE_ERRORS)),
      },
    },
    async (request, reply) => {
      const mode = parseQueryMode(request.query.legacy, request.query.bedrock);
      const { status: s, maxAge } = await statusFor(status, request.params.address, mode, config.statusCacheTtlSeconds, lookupOptions(request));
      const options = bannerOptions(request.query);
      return send(request, reply, {
        key: `banner|${s.server_id ?? `${mode}:${s.query.host}:${s.query.port}`}|${s.checked_at}|${s.stale}|${JSON.stringify(options)}`,
        contentType: 'image/png',
        cacheControl: `public, max-age=${maxAge}`,
        render: () => renders.banner(s, options),
      });
    },
  );
}
