/**
 * The embeddable widget (GET /widget/{size}/{address}): options, rendering, fonts and CSP.
 *
 * ```ts
 * const options = resolveWidgetOptions('normal', query);          // WidgetOptionError names a bad parameter
 * const html = renderWidget({ kind: 'demo' }, options, { basePath: '../..' });
 * reply.header('Content-Security-Policy', widgetContentSecurityPolicy());
 * ```
 */
export {
  DEFAULT_HEIGHTS,
  DEFAULT_OFFLINE_COLOR,
  DEFAULT_ONLINE_COLOR,
  ICON_SIZES,
  PLAYER_BAR_STYLES,
  RECOMMENDED_WIDTHS,
  STATUS_INDICATORS,
  TEXT_ALIGNS,
  WIDGET_BOUNDS,
  WIDGET_FONTS,
  WIDGET_SIZES,
  WIDGET_THEMES,
  WidgetOptionError,
  defaultWidgetOptions,
  parseCssPixels,
  parseHexColor,
  resolveWidgetOptions,
  widgetHeight,
  type CssHexColor,
  type WidgetFont,
  type WidgetOptions,
  type WidgetQuery,
  type WidgetSize,
} from './options.js';
export { DEMO_ADDRESS, demoStatus } from './demo.js';
export { FONT_FILES, FONT_PACKAGES, FONT_WEIGHTS, fontFileName } from './fonts.js';
export { renderWidget, type RenderContext, type WidgetSource } from './render.js';
export { WIDGET_SCRIPT_HASH, widgetContentSecurityPolicy } from './csp.js';
