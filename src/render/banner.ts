/**
 * Status banners (`/banner/{address}`): server name, player count in the accent colour, MOTD
 * with its formatting, latency and favicon, in two styles:
 *
 * - `modern`: a dark slate card with a soft accent glow, sans-serif labels, the MOTD in the
 *   pixel font on an inset panel, a status pill and a player bar;
 * - `classic`: a Minecraft-server-list look: pixel font with drop shadows over a dark
 *   procedurally drawn stone texture, signal bars for the latency.
 *
 * Pure: `renderBanner(status, options)` depends on nothing but its arguments (obfuscated
 * glyphs come from a generator seeded by the status), so the same inputs give the same bytes.
 *
 * The layout and the shared pieces are in banner-parts.ts, each style in its own module.
 */
import { loadImage, type Image } from '@napi-rs/canvas';
import type { ServerStatus } from '../core/types.js';
import { defaultIconPng } from './default-icon.js';
import { decodeFavicon } from './favicon.js';
import { registerRenderFonts } from './fonts.js';
import type { BannerOptions } from './options.js';
import { encodePng } from './png.js';
import { drawOn } from './surface.js';
import { hashString, seededRandom } from './text.js';
import { bannerLayout } from './banner-parts.js';
import { drawClassic } from './banner-classic.js';
import { drawModern } from './banner-modern.js';

export { BANNER_SIZES, BORDER_RADIUS, DEFAULT_BANNER_OPTIONS, type BannerOptions, type BannerSize, type BannerStyle } from './options.js';
export { bannerLayout, bannerTitle, latencyText, type BannerLayout, type Rect } from './banner-parts.js';

async function iconImage(status: ServerStatus): Promise<Image> {
  const favicon = decodeFavicon(status.favicon);
  if (favicon) {
    try {
      return await loadImage(favicon.png);
    } catch {
      // Undecodable favicon: the default icon stands in.
    }
  }
  return loadImage(await defaultIconPng());
}

/** A seed for the obfuscated glyphs: the same status and options always draw the same glyphs. */
function seedOf(status: ServerStatus, options: BannerOptions): number {
  return hashString(`${status.server_id ?? status.query.host}|${status.checked_at}|${status.motd?.raw ?? ''}|${options.style}|${options.size}`);
}

/** The PNG banner of a status: its icon decoded first, then drawn and encoded in one run on a reused canvas. */
export async function renderBanner(status: ServerStatus, options: BannerOptions): Promise<Buffer> {
  registerRenderFonts();
  const layout = bannerLayout(options, status.online);
  const icon = options.showFavicon ? await iconImage(status) : null;
  return drawOn(layout.width, layout.height, (canvas) => {
    const ctx = canvas.getContext('2d');
    const random = seededRandom(seedOf(status, options));
    if (options.style === 'classic') drawClassic(ctx, status, layout, options, icon as Image, random);
    else drawModern(ctx, status, layout, options, icon as Image, random);
    return encodePng(canvas);
  });
}
