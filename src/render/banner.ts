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
 */
import { createCanvas, loadImage, type Canvas, type Image, type SKRSContext2D } from '@napi-rs/canvas';
import { serverAddress, type ServerStatus } from '../core/types.js';
import { cleanServerText, type MotdSegment } from '../motd/index.js';
import { mixColors, shadowOf, withAlpha } from './color.js';
import { defaultIconPng } from './default-icon.js';
import { decodeFavicon } from './favicon.js';
import { fontFor, registerRenderFonts } from './fonts.js';
import { motdLines, segmentsOfMotd } from './motd-text.js';
import { BANNER_SIZES, BORDER_RADIUS, type BannerOptions } from './options.js';
import { fillHorizontalGradient } from './paint.js';
import { encodePng } from './png.js';
import { drawOn } from './surface.js';
import { drawLine, fitFontSize, fitLine, hashString, measureLine, seededRandom, type Random, type TextRunOptions } from './text.js';

export { BANNER_SIZES, BORDER_RADIUS, DEFAULT_BANNER_OPTIONS, type BannerOptions, type BannerSize, type BannerStyle } from './options.js';

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

const OFFLINE_RED = '#ef4444';
const ONLINE_GREEN = '#22c55e';

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

function plain(text: string, color: string | null = null, bold = false): MotdSegment {
  return { text, color: color as MotdSegment['color'], bold, italic: false, underlined: false, strikethrough: false, obfuscated: false };
}

function formatCount(n: number): string {
  return Math.max(0, Math.floor(n)).toLocaleString('en-US');
}

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

function drawIcon(ctx: SKRSContext2D, image: Image, rect: Rect, radius: number, dimmed: boolean): void {
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

function drawMotd(
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

function signalBars(latency: number | null): { bars: number; color: string } {
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

// -- modern -----------------------------------------------------------------------------------

function drawModern(ctx: SKRSContext2D, status: ServerStatus, layout: BannerLayout, options: BannerOptions, icon: Image, random: Random): void {
  const px = pxOf(layout);
  drawModernCard(ctx, status, layout, options, icon);
  const pillX = drawModernPill(ctx, status, layout, options);
  // Title, in the room the pill leaves.
  drawLine(ctx, [plain(bannerTitle(status), null, true)], layout.title.x, layout.title.y + px(20), pillX - layout.title.x - px(10), {
    kind: 'sans', px: px(22), defaultColor: options.textColor, random,
  });
  drawModernMotd(ctx, status, layout, options, random);
  if (layout.players && status.online) drawModernPlayers(ctx, status, layout, layout.players, options, random);
}

/** `n` design pixels (normal size) at this layout's scale, rounded to whole pixels. */
function pxOf(layout: BannerLayout): (n: number) => number {
  return (n: number) => Math.round(n * layout.scale);
}

/** Saves the context and clips it to the rounded card; the caller restores. */
function clipToCard(ctx: SKRSContext2D, layout: BannerLayout): void {
  ctx.save();
  ctx.beginPath();
  ctx.roundRect(0, 0, layout.width, layout.height, layout.radius);
  ctx.clip();
}

/** Card background, its edge, and the favicon in its frame. */
function drawModernCard(ctx: SKRSContext2D, status: ServerStatus, layout: BannerLayout, options: BannerOptions, icon: Image): void {
  const { width, height, radius } = layout;
  const px = pxOf(layout);
  clipToCard(ctx, layout);
  // Slate, warming towards the accent (red when offline) on the right, behind the status pill.
  const glowColor = status.online ? options.accentColor : OFFLINE_RED;
  fillHorizontalGradient(ctx, 0, 0, width, height, [
    [0, '#111827'],
    [0.5, '#0e1421'],
    [1, mixColors('#0e1421', glowColor, 0.18)],
  ]);
  ctx.restore();
  ctx.beginPath();
  ctx.roundRect(0.5, 0.5, width - 1, height - 1, Math.max(0, radius - 0.5));
  ctx.strokeStyle = 'rgba(255, 255, 255, 0.09)';
  ctx.lineWidth = 1;
  ctx.stroke();

  if (layout.favicon) {
    const f = layout.favicon;
    ctx.fillStyle = 'rgba(255, 255, 255, 0.04)';
    ctx.beginPath();
    ctx.roundRect(f.x - 1, f.y - 1, f.width + 2, f.height + 2, px(10) + 1);
    ctx.fill();
    drawIcon(ctx, icon, f, px(10), !status.online);
  }
}

/** Status pill: latency (or "Online") with a dot, "Offline" in red. Returns its left edge. */
function drawModernPill(ctx: SKRSContext2D, status: ServerStatus, layout: BannerLayout, options: BannerOptions): number {
  const px = pxOf(layout);
  const pillText = !status.online ? 'Offline' : options.showPing ? latencyText(status.roundTripLatency) : 'Online';
  const pillColor = status.online ? ONLINE_GREEN : OFFLINE_RED;
  ctx.font = fontFor('sans', px(13), { bold: true });
  const pillWidth = Math.ceil(ctx.measureText(pillText).width) + px(30);
  const pill = { x: layout.width - layout.pad - pillWidth, y: layout.badge.y + px(1), width: pillWidth, height: layout.badge.height };
  ctx.fillStyle = withAlpha(pillColor, 0.14);
  ctx.beginPath();
  ctx.roundRect(pill.x, pill.y, pill.width, pill.height, pill.height / 2);
  ctx.fill();
  ctx.strokeStyle = withAlpha(pillColor, 0.45);
  ctx.stroke();
  ctx.fillStyle = pillColor;
  ctx.beginPath();
  ctx.arc(pill.x + px(12), pill.y + pill.height / 2, px(4), 0, Math.PI * 2);
  ctx.fill();
  ctx.fillStyle = mixColors(pillColor, '#ffffff', 0.35);
  ctx.textBaseline = 'middle';
  ctx.fillText(pillText, pill.x + px(21), pill.y + pill.height / 2 + 0.5);
  ctx.textBaseline = 'alphabetic';
  return pill.x;
}

/** The MOTD panel (or the offline message where it would be). */
function drawModernMotd(ctx: SKRSContext2D, status: ServerStatus, layout: BannerLayout, options: BannerOptions, random: Random): void {
  const px = pxOf(layout);
  if (layout.motd) {
    const m = layout.motd;
    ctx.fillStyle = 'rgba(0, 0, 0, 0.32)';
    ctx.beginPath();
    ctx.roundRect(m.x, m.y, m.width, m.height, px(8));
    ctx.fill();
    ctx.strokeStyle = 'rgba(255, 255, 255, 0.05)';
    ctx.stroke();
    const inner = { x: m.x + px(10), y: m.y + px(4), width: m.width - px(20), height: m.height - px(8) };
    if (status.online) drawMotd(ctx, status, inner, options, random, false, px(18));
    else drawOfflineMessage(ctx, status, inner, options, random, 'sans', px(17), false);
  } else if (!status.online) {
    const top = layout.title.y + px(36);
    drawOfflineMessage(ctx, status, { x: layout.textX, y: top, width: layout.textWidth, height: layout.height - layout.pad - top }, options, random, 'sans', px(17), false);
  }
}

/** Player count in the accent colour, the player bar across the text column, and the version. */
function drawModernPlayers(ctx: SKRSContext2D, status: ServerStatus, layout: BannerLayout, p: Rect, options: BannerOptions, random: Random): void {
  const px = pxOf(layout);
  const muted = mixColors(options.textColor, '#64748b', 0.55);
  const online = status.players?.online ?? 0;
  const max = status.players?.max ?? 0;
  const count = [plain(formatCount(online), options.accentColor, true), plain(` / ${formatCount(max)}`, options.accentColor, true)];
  const baseline = p.y + px(17);
  const countWidth = drawLine(ctx, count, p.x, baseline, p.width, { kind: 'sans', px: px(18), defaultColor: options.accentColor, random });
  const labelWidth = drawLine(ctx, [plain(' players')], p.x + countWidth, baseline, p.width - countWidth, {
    kind: 'sans', px: px(14), defaultColor: muted, random,
  });

  const barY = layout.height - layout.pad - px(4);
  const barHeight = Math.max(2, px(4));
  ctx.fillStyle = 'rgba(255, 255, 255, 0.08)';
  ctx.beginPath();
  ctx.roundRect(layout.textX, barY, layout.textWidth, barHeight, barHeight / 2);
  ctx.fill();
  const share = max > 0 ? Math.min(1, online / max) : 0;
  if (share > 0) {
    ctx.fillStyle = options.accentColor;
    ctx.beginPath();
    ctx.roundRect(layout.textX, barY, Math.max(barHeight, layout.textWidth * share), barHeight, barHeight / 2);
    ctx.fill();
  }

  drawVersion(ctx, status, layout.textX + layout.textWidth, p.x + countWidth + labelWidth + px(16), baseline, {
    kind: 'sans', px: px(13), defaultColor: muted, random,
  });
}

/** The version name, right-aligned at `right`, cut to start no further left than `left`. */
function drawVersion(ctx: SKRSContext2D, status: ServerStatus, right: number, left: number, baseline: number, run: TextRunOptions): void {
  const version = cleanServerText(status.version?.name ?? '', MAX_VERSION_LENGTH);
  const room = right - left;
  if (!version || room < 40 * (run.px / 13)) return;
  const fitted = fitLine(ctx, [plain(version)], room, run);
  const w = measureLine(ctx, fitted, run);
  drawLine(ctx, fitted, right - w, baseline, room, run);
}

function drawOfflineMessage(
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

// -- classic ----------------------------------------------------------------------------------

const textureCache = new Map<string, Canvas>();

/** A dark stone texture of square "pixels", the same for every banner of a size. */
function stoneTexture(width: number, height: number, block: number): Canvas {
  const key = `${width}x${height}x${block}`;
  let canvas = textureCache.get(key);
  if (canvas) return canvas;
  canvas = createCanvas(width, height);
  const ctx = canvas.getContext('2d');
  const random = seededRandom(0x0b5e7e);
  const shades = ['#26262b', '#2b2b31', '#303037', '#232327', '#35353d', '#2e2e35'];
  for (let y = 0; y < height; y += block) {
    for (let x = 0; x < width; x += block) {
      ctx.fillStyle = shades[Math.floor(random() * shades.length)]!;
      ctx.fillRect(x, y, block, block);
    }
  }
  textureCache.set(key, canvas);
  return canvas;
}

function drawClassic(ctx: SKRSContext2D, status: ServerStatus, layout: BannerLayout, options: BannerOptions, icon: Image, random: Random): void {
  const { width, height } = layout;
  const px = pxOf(layout);
  const grey = mixColors(options.textColor, '#555555', 0.5);

  clipToCard(ctx, layout);
  ctx.drawImage(stoneTexture(width, height, Math.max(4, px(6))), 0, 0);
  // The server-list row: a black, translucent panel with a light grey edge.
  const inset = Math.max(3, px(6));
  ctx.fillStyle = 'rgba(0, 0, 0, 0.55)';
  ctx.fillRect(inset, inset, width - 2 * inset, height - 2 * inset);
  ctx.strokeStyle = 'rgba(160, 160, 160, 0.55)';
  ctx.lineWidth = Math.max(1, px(2));
  ctx.strokeRect(inset + 0.5, inset + 0.5, width - 2 * inset - 1, height - 2 * inset - 1);
  ctx.restore();

  if (layout.favicon) drawIcon(ctx, icon, layout.favicon, 0, !status.online);

  // Signal bars, Minecraft-style: five bars of rising height.
  const b = layout.badge;
  const { bars, color } = status.online ? signalBars(status.roundTripLatency) : { bars: 0, color: OFFLINE_RED };
  const barWidth = Math.max(2, px(4));
  const gap = Math.max(1, px(2));
  const total = 5 * barWidth + 4 * gap;
  for (let i = 0; i < 5; i++) {
    const h = Math.round((b.height * (i + 1)) / 5);
    const x = b.x + b.width - total + i * (barWidth + gap);
    const y = b.y + b.height - h;
    ctx.fillStyle = '#000000';
    ctx.fillRect(x + 1, y + 1, barWidth, h);
    ctx.fillStyle = i < bars ? color : status.online ? '#3f3f46' : shadowOf(OFFLINE_RED);
    ctx.fillRect(x, y, barWidth, h);
  }
  let titleRight = b.x + b.width - total - px(10);
  if (options.showPing && status.online) {
    const text = [plain(latencyText(status.roundTripLatency))];
    const size = px(14);
    const w = measureLine(ctx, text, { kind: 'pixel', px: size });
    titleRight -= w + px(8);
    drawLine(ctx, text, titleRight + px(8), b.y + b.height - px(2), w + 1, {
      kind: 'pixel', px: size, defaultColor: grey, shadow: true, random,
    });
  }

  drawLine(ctx, [plain(bannerTitle(status))], layout.title.x, layout.title.y + px(19), titleRight - layout.title.x, {
    kind: 'pixel', px: px(22), defaultColor: options.textColor, shadow: true, random,
  });

  if (status.online) {
    if (layout.motd) drawMotd(ctx, status, layout.motd, options, random, true, px(19));
  } else {
    const rect = layout.motd ?? { x: layout.textX, y: layout.title.y + px(34), width: layout.textWidth, height: height - layout.pad - layout.title.y - px(34) };
    drawOfflineMessage(ctx, status, rect, options, random, 'pixel', px(18), true);
  }

  if (layout.players && status.online) {
    const p = layout.players;
    const size = px(18);
    const baseline = p.y + px(17);
    const count = [plain(`${formatCount(status.players?.online ?? 0)}/${formatCount(status.players?.max ?? 0)}`, options.accentColor)];
    const countWidth = drawLine(ctx, count, p.x, baseline, p.width, { kind: 'pixel', px: size, defaultColor: options.accentColor, shadow: true, random });
    const labelWidth = drawLine(ctx, [plain(' players')], p.x + countWidth, baseline, p.width - countWidth, {
      kind: 'pixel', px: px(15), defaultColor: grey, shadow: true, random,
    });
    drawVersion(ctx, status, layout.textX + layout.textWidth, p.x + countWidth + labelWidth + px(16), baseline, {
      kind: 'pixel', px: px(15), defaultColor: '#808080', shadow: true, random,
    });
  }
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
