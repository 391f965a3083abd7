/**
 * Badges: GET /badge/{address} (an SVG for READMEs) and GET /shields/{address} (the same
 * content as shields.io's endpoint JSON). Both take one query shape, with the address and
 * edition parameters of the banners, and go through the StatusService like the images
 * (images.ts): a name with no DNS records is an offline badge, not a 404. Each answer carries
 * an ETag derived from what it shows, so a revalidation whose badge has not changed is a 304.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import type { Config } from '../../config/index.js';
import { badgeContent, shieldsEndpoint, type BadgeContent, type BadgeOptions } from '../../render/badge.js';
import { BADGE_DEFAULTS, BADGE_STYLES, MAX_BADGE_LABEL_LENGTH } from '../../render/badge-options.js';
import type { RenderPool } from '../../render/index.js';
import { etagOf, matchesIfNoneMatch } from '../../render/cache.js';
import { parseHexColor } from '../../render/color.js';
import { parseQueryMode } from '../../resolve/index.js';
import type { StatusLookup } from '../../status/types.js';
import { PING_BUDGET_NOTE, type MediaLookupOptions } from '../ping-budget.js';
import { tierConfig } from '../rate-limit.js';
import { BooleanFlag } from '../schemas.js';
import { empty, errorResponses, headers, json, text, withPathParameters } from '../contract.js';
import { Address, HexColor, SERVER_IMAGE_ERRORS, statusFor } from './images.js';

/** Bump when the drawing changes, so clients holding an old ETag get the new badge. */
const BADGE_VERSION = 1;

const BadgeQuery = Type.Object({
  label: Type.String({
    maxLength: MAX_BADGE_LABEL_LENGTH,
    // No control characters: a label is one line of text.
    pattern: '^[^\\u0000-\\u001f\\u007f]*$',
    default: BADGE_DEFAULTS.label,
    description: `Left text, at most ${MAX_BADGE_LABEL_LENGTH} characters; empty (\`label=\`) for the message alone.`,
  }),
  style: Type.Enum(BADGE_STYLES, { default: BADGE_DEFAULTS.style, description: 'Badge style.' }),
  labelColor: Type.Optional(HexColor(`Label background (default \`${BADGE_DEFAULTS.labelColor}\`)`, '#555')),
  onlineColor: Type.Optional(HexColor(`Message background when online (default \`${BADGE_DEFAULTS.onlineColor}\`)`, '#2e7d32')),
  offlineColor: Type.Optional(HexColor(`Message background when offline (default \`${BADGE_DEFAULTS.offlineColor}\`)`, '#c62828')),
  bedrock: BooleanFlag('Bedrock protocol.'),
  legacy: BooleanFlag('Legacy Java protocol.'),
});
type BadgeQuery = Static<typeof BadgeQuery>;

const ShieldsEndpoint = Type.Object(
  {
    schemaVersion: Type.Literal(1),
    label: Type.String({ description: 'Left text; empty for none.' }),
    message: Type.String({ description: '`12/100 online` (`online` when the server reports no players) or `offline`.' }),
    color: Type.String({ description: 'Message colour, `#rrggbb`.' }),
    labelColor: Type.String({ description: 'Label colour, `#rrggbb`.' }),
    isError: Type.Boolean({ description: 'True when the server is offline: shields.io then keeps the offline colour.' }),
    style: Type.Enum(BADGE_STYLES),
    cacheSeconds: Type.Integer({ minimum: 300, description: 'How long shields.io may keep the badge: the status cache lifetime, at least 300.' }),
  },
  { additionalProperties: false, description: "shields.io's endpoint badge JSON, schema version 1." },
);

const NOT_MODIFIED = empty('Not modified: the `If-None-Match` ETag still names this answer.', headers('Cache-Control!', 'ETag!', 'RateLimit-Policy'));

interface Badge {
  content: BadgeContent;
  style: BadgeQuery['style'];
  maxAge: number;
}

/** Cache-Control and ETag; true when `If-None-Match` still names this answer (send a 304). */
function notModified(request: FastifyRequest, reply: FastifyReply, key: string, maxAge: number): boolean {
  const etag = etagOf(`badge-v${BADGE_VERSION}|${key}`);
  reply.header('Cache-Control', `public, max-age=${maxAge}`).header('ETag', etag);
  return matchesIfNoneMatch(request.headers['if-none-match'], etag);
}

export const badgeRoutes: FastifyPluginAsyncTypebox<{
  status: StatusLookup;
  config: Config;
  lookupOptions: MediaLookupOptions;
  /** Draws the SVG, its text measured with the bundled font (src/render/pool.ts). */
  renders: RenderPool;
}> = async (app, { status, config, lookupOptions, renders }) => {
  const media = tierConfig('media');
  const params = Type.Object({ address: Address });

  async function badgeFor(request: FastifyRequest, address: string, q: BadgeQuery): Promise<Badge> {
    const mode = parseQueryMode(q.legacy, q.bedrock);
    const { status: s, maxAge } = await statusFor(status, address, mode, config.statusCacheTtlSeconds, lookupOptions(request));
    const colour = (value: string | undefined, fallback: string) => (value === undefined ? fallback : (parseHexColor(value) ?? fallback));
    const options: BadgeOptions = {
      label: q.label,
      style: q.style,
      labelColor: colour(q.labelColor, BADGE_DEFAULTS.labelColor),
      onlineColor: colour(q.onlineColor, BADGE_DEFAULTS.onlineColor),
      offlineColor: colour(q.offlineColor, BADGE_DEFAULTS.offlineColor),
    };
    return { content: badgeContent(s, options), style: q.style, maxAge };
  }

  app.get(
    '/badge/:address',
    {
      config: media,
      schema: {
        operationId: 'getServerBadge',
        summary: 'Status badge (SVG)',
        description:
          'A small SVG badge for READMEs: the label, then `12/100 online` on the online colour or `offline` on the offline colour. ' +
          'Styles `flat`, `flat-square` and `for-the-badge`. Text widths are measured with the bundled Noto Sans and fixed with ' +
          '`textLength`, so another font never overflows. `Cache-Control: max-age` follows the freshness of the status it shows; ' +
          'the ETag changes only when the badge does.' +
          PING_BUDGET_NOTE,
        tags: ['images'],
        security: [],
        params,
        querystring: BadgeQuery,
        response: {
          200: text('The badge.', 'image/svg+xml', headers('Cache-Control!', 'ETag!', 'RateLimit-Policy')),
          304: NOT_MODIFIED,
          ...errorResponses(withPathParameters(SERVER_IMAGE_ERRORS), { limited: true }),
        },
      },
    },
    async (request, reply) => {
      const badge = await badgeFor(request, request.params.address, request.query);
      if (notModified(request, reply, `svg|${JSON.stringify([badge.content, badge.style])}`, badge.maxAge)) return reply.code(304).send(null);
      const svg = await renders.badgeSvg(badge.content, badge.style);
      // Opened on its own, the SVG may load nothing and run nothing.
      reply.header('Content-Security-Policy', "default-src 'none'").header('X-Content-Type-Options', 'nosniff');
      return reply.type('image/svg+xml; charset=utf-8').send(svg);
    },
  );

  app.get(
    '/shields/:address',
    {
      config: media,
      schema: {
        operationId: 'getServerShieldsBadge',
        summary: 'Status badge (shields.io endpoint)',
        description:
          "The badge's content as shields.io's endpoint JSON (schema version 1), for " +
          '`https://img.shields.io/endpoint?url=<this URL, encoded>`. Same parameters and messages as `/badge/{address}`.' +
          PING_BUDGET_NOTE,
        tags: ['images'],
        security: [],
        params,
        querystring: BadgeQuery,
        response: {
          200: json("The badge's content for shields.io.", ShieldsEndpoint, headers('Cache-Control!', 'ETag!', 'RateLimit-Policy')),
          304: NOT_MODIFIED,
          ...errorResponses(withPathParameters(SERVER_IMAGE_ERRORS), { limited: true }),
        },
      },
    },
    async (request, reply) => {
      const badge = await badgeFor(request, request.params.address, request.query);
      const body = shieldsEndpoint(badge.content, badge.style, config.statusCacheTtlSeconds);
      if (notModified(request, reply, `shields|${JSON.stringify(body)}`, badge.maxAge)) return reply.code(304).send(null);
      return body;
    },
  );
};
