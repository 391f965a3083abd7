/**
 * Images from a server's status: icons, status banners and the MOTD banner, drawn with
 * @napi-rs/canvas and encoded/resized with sharp. Pure functions of their inputs; no HTTP,
 * no configuration. The widget (HTML) lives in ./widget/.
 */
export {
  BANNER_SIZES,
  BORDER_RADIUS,
  DEFAULT_BANNER_OPTIONS,
  bannerLayout,
  bannerTitle,
  drawBanner,
  renderBanner,
  type BannerLayout,
  type BannerOptions,
  type BannerSize,
  type BannerStyle,
  type Rect,
} from './banner.js';
export { RENDER_VERSION, RenderCache, digestOf, etagOf, matchesIfNoneMatch, type RenderedImage, type RenderCacheOptions } from './cache.js';
export { parseHexColor } from './color.js';
export { defaultIconPng, DEFAULT_ICON_SIZE } from './default-icon.js';
export { decodeFavicon, MAX_FAVICON_DATA_URL_LENGTH, MAX_FAVICON_SIDE, type Favicon } from './favicon.js';
export { PIXEL_FAMILY, SANS_FAMILY, registerRenderFonts } from './fonts.js';
export { DYNAMIC_ICON_SIZE, ROUNDED_ICON_RADIUS, SHARP_ICON_SIZE, renderIcon, type IconFormat, type IconOptions } from './icon.js';
export {
  MAX_MOTD_PARAMETER_LENGTH,
  MOTD_BANNER_HEIGHT,
  MOTD_BANNER_WIDTH,
  drawMotdBanner,
  renderMotdBanner,
  type MotdBannerOptions,
} from './motd-banner.js';
