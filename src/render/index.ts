/**
 * Images from a server's status: icons, status banners and the MOTD banner, drawn with
 * @napi-rs/canvas and encoded/resized with sharp. Pure functions of their inputs; no HTTP,
 * no configuration. The widget (HTML) lives in ./widget/.
 *
 * Images are drawn in the render pool's worker threads (./pool.ts, ./worker.ts): the drawing
 * code, canvas, sharp and the fonts load there, never on the event loop's thread. Sizes,
 * options and the cache load here at once.
 */
import { renderFontFiles } from './font-files.js';

export {
  BANNER_SIZES,
  BORDER_RADIUS,
  DEFAULT_BANNER_OPTIONS,
  DEFAULT_ICON_SIZE,
  DYNAMIC_ICON_SIZE,
  MAX_MOTD_PARAMETER_LENGTH,
  MOTD_BANNER_HEIGHT,
  MOTD_BANNER_WIDTH,
  ROUNDED_ICON_RADIUS,
  SHARP_ICON_SIZE,
  type BannerOptions,
  type BannerSize,
  type BannerStyle,
  type IconFormat,
  type IconOptions,
  type MotdBannerOptions,
} from './options.js';
export { RENDER_VERSION, RenderCache, digestOf, etagOf, matchesIfNoneMatch, type RenderedImage, type RenderCacheOptions } from './cache.js';
export { parseHexColor } from './color.js';
export { decodeFavicon, MAX_FAVICON_DATA_URL_LENGTH, MAX_FAVICON_SIDE, type Favicon } from './favicon.js';
export { PIXEL_FAMILY, SANS_FAMILY } from './font-files.js';
export { RenderPool, type RenderPoolOptions } from './pool.js';

/**
 * Checks that the bundled font files are installed, so that a broken install stops start-up;
 * each render worker registers them with Skia before its first image.
 */
export function registerRenderFonts(): void {
  renderFontFiles();
}
