/**
 * Images from a server's status: icons, status banners and the MOTD banner, drawn with
 * @napi-rs/canvas and encoded/resized with sharp. Pure functions of their inputs; no HTTP,
 * no configuration. The widget (HTML) lives in ./widget/.
 *
 * The drawing code, canvas, sharp and the fonts are loaded with the first image asked for,
 * not at start-up: a service that never draws one does not hold them in memory
 * (docs/performance.md#memory). Sizes, options and the cache load at once.
 */
import type { ServerStatus } from '../core/types.js';
import { renderFontFiles } from './font-files.js';
import type { BannerOptions, IconOptions, MotdBannerOptions } from './options.js';

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

type Drawing = typeof import('./drawing.js');
let drawing: Promise<Drawing> | undefined;
const loadDrawing = (): Promise<Drawing> => (drawing ??= import('./drawing.js'));

/**
 * Checks that the bundled font files are installed, so that a broken install stops start-up;
 * Skia registers them with the first image drawn.
 */
export function registerRenderFonts(): void {
  renderFontFiles();
}

/** The PNG banner of a status (./banner.ts). */
export async function renderBanner(status: ServerStatus, options: BannerOptions): Promise<Buffer> {
  return (await loadDrawing()).renderBanner(status, options);
}

/** The icon of a favicon data URL, or of the default icon (./icon.ts). */
export async function renderIcon(favicon: string | null, options: IconOptions): Promise<Buffer> {
  return (await loadDrawing()).renderIcon(favicon, options);
}

/** The MOTD banner as PNG (./motd-banner.ts). */
export async function renderMotdBanner(text: string, options: MotdBannerOptions): Promise<Buffer> {
  return (await loadDrawing()).renderMotdBanner(text, options);
}

/** Observer's default icon as a 64x64 PNG (./default-icon.ts). */
export async function defaultIconPng(): Promise<Buffer> {
  return (await loadDrawing()).defaultIconPng();
}
