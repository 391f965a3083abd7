/**
 * The layout of a status banner and the pieces both its styles draw (icon, MOTD, version,
 * offline message, latency), for banner-modern.ts and banner-classic.ts.
 */
import type { Image, SKRSContext2D } from '@napi-rs/canvas';
import { serverAddress, type ServerStatus } from '../core/types.js';
import { cleanServerText, type MotdSegment } from '../motd/index.js';
import { mixColors } from './color.js';
import { motdLines, segmentsOfMotd } from './motd-text.js';
import { BANNER_SIZES, BORDER_RADIUS, type BannerOptions } from './options.js';
import { drawLine, fitFontSize, fitLine, measureLine, type Random, type TextRunOptions } from './text.js';

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** Where the parts of a banner are drawn; exported so tests can look at the right pixels. */
export interface BannerLayout {
  width: number;
  height: number;
  /** Scale relative to the normal size (height 180). */
  scale: number;
  radius: number;
  pad: number;
  favicon: Rect | null;
  /** Left edge and width of the text column. */
  textX: number;
  textWidth: number;
  title: Rect;
  /** The status pill (modern) or signal bars (classic), top right. */
  badge: Rect;
  motd: Rect | null;
  /** The player count text; null for an offline server. */
  players: Rect | null;
}

export const OFFLINE_RED = '#ef4444';
export const ONLINE_GREEN = '#22c55e';

/** Limits on server-provided text before it is measured or drawn. */
const MAX_TITLE_LENGTH = 96;
const MAX_VERSION_LENGTH = 40;
const MAX_ERROR_LENGTH = 64;

export function bannerLayout(options: BannerOptions, online: boolean): BannerLayout {
  const { width, height } = BANNER_SIZES[options.size];
  const scale = height / 180;
  const px = (n: number) => Math.round(n * scale);
  const pad = px(18);
  const radius = Math.min(options.borderRadius * BORDER_RADIUS.unitPx * scale, height / 2);
  const iconSide = height - 2 * pad;
  const favicon = options.showFavicon ? { x: pad, y: pad, width: iconSide, height: iconSide } : null;
  const textX = favicon ? pad + iconSide + px(18) : pad + px(4);
  const textWidth = width - textX - pad;
  const badgeWidth = options.style === 'classic' ? px(34) : px(96);
  const badge = { x: width - pad - badgeWidth, y: pad, width: badgeWidth, height: px(24) };
  const title = { x: textX, y: pad, width: badge.x - textX - px(10), height: px(26) };
  const motdTop = pad + px(options.style === 'classic' ? 34 : 36);
  const motdBottom = height - pad - px(options.style === 'classic' ? 36 : 38);
  const motd = options.showMotd ? { x: textX, y: motdTop, width: textWidth, height: motdBottom - motdTop } : null;
  const playersHeight = px(22);
  const players = online
    ? { x: textX, y: height - pad - playersHeight - px(options.style === 'classic' ? 0 : 8), width: Math.round(textWidth * 0.6), height: playersHeight }
    : null;
  return { width, height, scale, radius, pad, favicon, textX, textWidth, title, badge, motd, players };
}

/** The name shown on a banner: the queried host, with the port when it is not the default. */
export function bannerTitle(status: ServerStatus): string {
  return serverAddress(status.query.bedrock ? 'bedrock' : 'java', status.query.host.slice(0, MAX_TITLE_LENGTH), status.query.port);
}

export function plain(text: string, color: string | null = null, bold = false): MotdSegment {
  return { text, color: color as MotdSegment['color'], bold, italic: false, underlined: false, strikethrough: false, obfuscated: false };
}

export function formatCount(n: number): string {
  return Math.max(0, Math.floor(n)).toLocaleString('en-US');
}

export function drawIcon(ctx: SKRSContext2D, image: Image, rect: Rect, radius: number, dimmed: boolean): void {
  ctx.save();
  if (radius > 0) {
    ctx.beginPath();
    ctx.roundRect(rect.x, rect.y, rect.width, rect.height, radius);
    ctx.clip();
  }
  // Nearest-neighbour when enlarging keeps 64x64 pixel art crisp.
  ctx.imageSmoothingEnabled = !(image.width <= rect.width && image.height <= rect.height);
  ctx.imageSmoothingQuality = 'high';
  if (dimmed) {
    ctx.filter = 'grayscale(1)';
    ctx.globalAlpha = 0.55;
  }
  const side = Math.min(rect.width / image.width, rect.height / image.height);
  const w = image.width * side;
  const h = image.height * side;
  ctx.drawImage(image, rect.x + (rect.width - w) / 2, rect.y + (rect.height - h) / 2, w, h);
  ctx.restore();
}

export function drawMotd(
  ctx: SKRSContext2D,
  status: ServerStatus,
  rect: Rect,
  options: BannerOptions,
  random: Random,
  shadow: boolean,
  maxPx: number,
): void {
  const segments = status.motd ? segmentsOfMotd(status.motd) : [];
  const lines = motdLines(segments, 2);
  while (lines.length > 1 && lines[lines.length - 1]!.every((s) => s.text.trim() === '')) lines.pop();
  const lineHeight = 1.3;
  const px = fitFontSize(ctx, lines, 'pixel', rect, { min: Math.round(maxPx * 0.7), max: maxPx, lineHeight });
  const step = px * lineHeight;
  const top = rect.y + (rect.height - step * lines.length) / 2;
  lines.forEach((line, i) => {
    drawLine(ctx, line, rect.x, top + step * i + px * 0.95, rect.width, {
      kind: 'pixel',
      px,
      defaultColor: mixColors(options.textColor, '#808080', 0.25),
      shadow,
      random,
    });
  });
}

export function signalBars(latency: number | null): { bars: number; color: string } {
  if (latency === null) return { bars: 0, color: '#808080' };
  if (latency < 150) return { bars: 5, color: ONLINE_GREEN };
  if (latency < 300) return { bars: 4, color: ONLINE_GREEN };
  if (latency < 600) return { bars: 3, color: '#eab308' };
  if (latency < 1000) return { bars: 2, color: '#f97316' };
  return { bars: 1, color: OFFLINE_RED };
}

/** Latency as shown; capped so that an absurd value cannot push the title off the banner. */
export function latencyText(latency: number | null): string {
  if (latency === null || !Number.isFinite(latency)) return '? ms';
  return latency >= 100_000 ? '99999+ ms' : `${Math.max(0, Math.round(latency))} ms`;
}

/** `n` design pixels (normal size) at this layout's scale, rounded to whole pixels. */
export function pxOf(layout: BannerLayout): (n: number) => number {
  return (n: number) => Math.round(n * layout.scale);
}

/** Saves the context and clips it to the rounded card; the caller restores. */
export function clipToCard(ctx: SKRSContext2D, layout: BannerLayout): void {
  ctx.save();
  ctx.beginPath();
  ctx.roundRect(0, 0, layout.width, layout.height, layout.radius);
  ctx.clip();
}

/** The version name, right-aligned at `right`, cut to start no further left than `left`. */
export function drawVersion(ctx: SKRSContext2D, status: ServerStatus, right: number, left: number, baseline: number, run: TextRunOptions): void {
  const version = cleanServerText(status.version?.name ?? '', MAX_VERSION_LENGTH);
  const room = right - left;
  if (!version || room < 40 * (run.px / 13)) return;
  const fitted = fitLine(ctx, [plain(version)], room, run);
  const w = measureLine(ctx, fitted, run);
  drawLine(ctx, fitted, right - w, baseline, room, run);
}

export function drawOfflineMessage(
  ctx: SKRSContext2D,
  status: ServerStatus,
  rect: Rect,
  options: BannerOptions,
  random: Random,
  kind: 'pixel' | 'sans',
  size: number,
  shadow: boolean,
): void {
  const reason = cleanServerText(status.error ?? '', MAX_ERROR_LENGTH);
  const lines: MotdSegment[][] = [[plain('Server offline', '#ff6b6b', true)]];
  if (reason) lines.push([plain(reason.charAt(0).toUpperCase() + reason.slice(1))]);
  const step = size * 1.35;
  const top = rect.y + (rect.height - step * lines.length) / 2;
  lines.forEach((line, i) => {
    drawLine(ctx, line, rect.x, top + step * i + size * 0.95, rect.width, {
      kind,
      px: i === 0 ? size : Math.round(size * 0.85),
      defaultColor: mixColors(options.textColor, '#64748b', 0.5),
      shadow,
      random,
    });
  });
}
