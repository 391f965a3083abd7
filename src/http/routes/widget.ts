/**
 * GET /widget/{size}/{address}: the embeddable live-status HTML page, and
 * GET /widget/fonts/{file}: the web fonts it may use, served from the @fontsource packages.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Config } from '../../config/index.js';
import { HostNotFoundError, ObserverError } from '../../core/errors.js';
import * as widget from '../../render/widget/index.js';
import { parseQueryMode } from '../../resolve/index.js';
import type { QueryMode } from '../../core/types.js';
import type { LookupOptions, StatusLookup } from '../../status/types.js';
import { PING_BUDGET_NOTE, type MediaLookupOptions, type RenderGate } from '../ping-budget.js';
import { SERVER_IMAGE_ERRORS } from './images.js';
import { tierConfig } from '../rate-limit.js';
import { binary, errorResponses, headers, text, withPathParameters } from '../contract.js';
import { BooleanFlag } from '../schemas.js';
import type { Tracer } from '../../core/tracing.js';

const require = createRequire(import.meta.url);

const color = (description: string) =>
  Type.String({
    maxLength: 16,
    description: `${description} \`#RGB\` or \`#RRGGBB\`, with or without \`#\` (sent as \`%23\`).`,
    examples: ['%2310b981', '10b981', 'fff'],
  });

const WidgetQuery = Type.Object(
  {
    theme: Type.Enum(widget.WIDGET_THEMES, { default: 'dark', description: 'Colour theme.' }),
    showPlayers: BooleanFlag('Player count and bar (and, in `large`, some player names).', true),
    showVersion: BooleanFlag('Version name.', true),
    showMotd: BooleanFlag('MOTD with its colours and styles (`normal` and `large`).', true),
    showLatency: BooleanFlag('Query latency.', true),
    showFavicon: BooleanFlag("Server icon; without one, Observer's own default icon.", true),
    showProtocol: BooleanFlag('Protocol number.'),
    showBorder: BooleanFlag('Border of `borderWidth` pixels.'),
    bgColor: Type.Optional(color('Background colour. Text colours follow its lightness unless `textColor` is set.')),
    textColor: Type.Optional(color('Text colour.')),
    onlineColor: Type.Optional(color('Online state colour (default `#10b981`).')),
    offlineColor: Type.Optional(color('Offline state colour (default `#ef4444`).')),
    gradientBg: BooleanFlag('Gradient background, from `gradientFrom` to `gradientTo` (defaults follow the theme).'),
    gradientFrom: Type.Optional(color('First gradient colour (with `gradientBg=true`).')),
    gradientTo: Type.Optional(color('Last gradient colour (with `gradientBg=true`).')),
    statusIndicator: Type.Enum(widget.STATUS_INDICATORS, { default: 'dot', description: 'How the online state is shown.' }),
    iconSize: Type.Enum(widget.ICON_SIZES, { default: 'medium', description: 'Icon size relative to the widget size.' }),
    font: Type.Optional(
      Type.String({
        maxLength: 16,
        description: `${widget.WIDGET_FONTS.join(', ')} (any case), served by Observer (SIL Open Font License 1.1). Default: the system font.`,
      }),
    ),
    textAlign: Type.Enum(widget.TEXT_ALIGNS, { default: 'left' }),
    customHeight: Type.Optional(
      Type.String({
        maxLength: 8,
        description: `Height in CSS pixels, ${widget.WIDGET_BOUNDS.customHeight.min} to ${widget.WIDGET_BOUNDS.customHeight.max}: \`120\` or \`120px\`. Default: ${widget.WIDGET_SIZES.map((s) => `${s} ${widget.DEFAULT_HEIGHTS[s]}`).join(', ')}.`,
      }),
    ),
    borderRadius: Type.Number({
      minimum: widget.WIDGET_BOUNDS.borderRadius.min,
      maximum: widget.WIDGET_BOUNDS.borderRadius.max,
      default: widget.WIDGET_BOUNDS.borderRadius.default,
      description: 'Corner radius in rem (1 rem = 16 px).',
    }),
    borderWidth: Type.Number({
      minimum: widget.WIDGET_BOUNDS.borderWidth.min,
      maximum: widget.WIDGET_BOUNDS.borderWidth.max,
      default: widget.WIDGET_BOUNDS.borderWidth.default,
      description: 'Border width in pixels, drawn with `showBorder=true`.',
    }),
    hoverEffect: BooleanFlag('Lift and outline the widget under the pointer.'),
    glowEffect: BooleanFlag('Glow in the state colour.'),
    boxShadow: BooleanFlag('Drop shadow. Effects drawn outside the widget shrink it inside its height so the frame never cuts them.'),
    playerBarStyle: Type.Enum(widget.PLAYER_BAR_STYLES, { default: 'default', description: 'Player bar fill.' }),
    refresh: Type.Integer({
      minimum: widget.WIDGET_BOUNDS.refresh.min,
      maximum: widget.WIDGET_BOUNDS.refresh.max,
      default: widget.WIDGET_BOUNDS.refresh.default,
      description: 'Seconds between two refreshes of the live data in the browser.',
    }),
    legacy: BooleanFlag('Query with the pre-1.7.2 Java protocol.'),
    bedrock: BooleanFlag('Query with the Bedrock protocol.'),
  },
  { additionalProperties: true },
);

const WIDGET_DESCRIPTION =
  'A self-contained HTML page showing a server\'s live status, to embed with an iframe, e.g. ' +
  '`<iframe src="…/api/v1/widget/normal/play.example.com" width="420" height="180" style="border:0" title="Server status"></iframe>` ' +
  `(designed widths: ${widget.WIDGET_SIZES.map((s) => `${s} ${widget.RECOMMENDED_WIDTHS[s]}`).join(', ')} px; heights: ` +
  `${widget.WIDGET_SIZES.map((s) => `${s} ${widget.DEFAULT_HEIGHTS[s]}`).join(', ')} px or \`customHeight\`). ` +
  'The page loads nothing from any other origin: styles and its one script are inline, fonts come from ' +
  '`/api/v1/widget/fonts/`, and it refreshes itself from `/api/v1/status/{address}` (relative to its own URL, ' +
  'so it works behind a reverse proxy) every `refresh` seconds. It shows offline and stale (`Cached`) states. ' +
  'Address `demo` renders fixed sample data without any network access. A host with no DNS records renders ' +
  'as offline. Unknown query parameters are ignored. Fonts: Inter, Roboto, Poppins, Montserrat and Outfit from ' +
  'the Fontsource packages, under the SIL Open Font License 1.1 (licence texts in assets/fonts/ and in each package\'s LICENSE file).';

interface WidgetRouteOptions {
  status: StatusLookup;
  config: Config;
  lookupOptions: MediaLookupOptions;
  renderGate: RenderGate;
  tracer: Tracer;
}

type WidgetApp = Parameters<FastifyPluginAsyncTypebox>[0];

export const widgetRoutes: FastifyPluginAsyncTypebox<WidgetRouteOptions> = async (app, options) => {
  registerWidgetPage(app, options);
  registerWidgetFonts(app);
};

/** The widget's options from its size and query, or a 400 naming what is wrong. */
function widgetOptions(size: widget.WidgetSize, query: Record<string, unknown>) {
  try {
    return widget.resolveWidgetOptions(size, query);
  } catch (error) {
    if (error instanceof widget.WidgetOptionError) throw new ObserverError('invalid_parameter', 400, error.message);
    throw error;
  }
}

/** What the widget shows: sample data, a server's status, or a name with no DNS records. */
async function widgetSource(status: StatusLookup, address: string, mode: QueryMode, options: LookupOptions): Promise<widget.WidgetSource> {
  if (address.toLowerCase() === widget.DEMO_ADDRESS) return { kind: 'demo' };
  try {
    return { kind: 'server', address, mode, status: (await status.lookup(address, mode, options)).status };
  } catch (error) {
    if (!(error instanceof HostNotFoundError)) throw error;
    return { kind: 'not_found', address, mode };
  }
}

/** GET /widget/{size}/{address}: the embeddable page. */
function registerWidgetPage(app: WidgetApp, { status, lookupOptions, renderGate, tracer }: WidgetRouteOptions): void {
  app.get(
    '/widget/:size/:address',
    {
      config: tierConfig('media'),
      schema: {
        operationId: 'getServerWidget',
        summary: 'Embeddable status widget (HTML)',
        description: WIDGET_DESCRIPTION + PING_BUDGET_NOTE,
        tags: ['widget'],
        security: [],
        params: Type.Object({
          size: Type.Enum(widget.WIDGET_SIZES, { description: 'Layout and default height.', examples: ['normal'] }),
          address: Type.String({ minLength: 1, maxLength: 255, description: 'Server address, or `demo` for sample data.', examples: ['demo'] }),
        }),
        querystring: WidgetQuery,
        response: {
          200: text('The widget page.', 'text/html', headers('Cache-Control!', 'RateLimit-Policy')),
          ...errorResponses(withPathParameters(SERVER_IMAGE_ERRORS), { limited: true }),
        },
      },
    },
    async (request, reply) => {
      const { size, address } = request.params;
      const { legacy, bedrock, ...query } = request.query;
      const options = widgetOptions(size, query);
      const source = await widgetSource(status, address, parseQueryMode(legacy, bedrock), lookupOptions(request));
      // The page is at {api}/widget/{size}/{address}[/]: the API root is two folders up (three
      // with a trailing slash), whatever prefix a proxy put in front of it.
      const path = request.url.split('?')[0] ?? '';
      const basePath = path.endsWith('/') ? '../../..' : '../..';
      const html = await renderGate(request, async () => tracer.spanSync('render.widget', () => widget.renderWidget(source, options, { basePath })));
      return reply
        .type('text/html; charset=utf-8')
        .header('Content-Security-Policy', widget.widgetContentSecurityPolicy())
        .header('Cache-Control', 'public, max-age=60, stale-while-revalidate=300')
        .header('X-Content-Type-Options', 'nosniff')
        .send(html);
    },
  );
}

/** GET /widget/fonts/{file}: the woff2 files of the widget fonts, read once each. */
function registerWidgetFonts(app: WidgetApp): void {
  const fontCache = new Map<string, Buffer>();
  app.get(
    '/widget/fonts/:file',
    {
      config: tierConfig('media'),
      schema: {
        operationId: 'getWidgetFont',
        summary: 'Widget web font',
        description:
          'Latin woff2 files of the widget fonts (weights 400 to 700), from the Fontsource packages; SIL Open Font ' +
          'License 1.1. Cached for a year.',
        tags: ['widget'],
        security: [],
        params: Type.Object({ file: Type.String({ maxLength: 64, examples: ['inter-latin-400-normal.woff2'] }) }),
        response: {
          200: binary('woff2 font.', ['font/woff2'], headers('Cache-Control!', 'RateLimit-Policy')),
          ...errorResponses(withPathParameters({ 400: ['invalid_parameter'], 404: ['not_found'], 429: ['rate_limited'] }), { limited: true }),
        },
      },
    },
    async (request, reply) => {
      const { file } = request.params;
      const entry = widget.FONT_FILES.get(file);
      if (!entry) throw new ObserverError('not_found', 404, 'No such widget font.');
      let body = fontCache.get(file);
      if (!body) {
        const packageDir = dirname(require.resolve(`${widget.FONT_PACKAGES[entry.font]}/package.json`));
        body = await readFile(join(packageDir, 'files', file));
        fontCache.set(file, body);
      }
      return reply
        .type('font/woff2')
        .header('Cache-Control', 'public, max-age=31536000, immutable')
        .header('X-Content-Type-Options', 'nosniff')
        .send(body);
    },
  );
}
