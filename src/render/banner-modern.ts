/**
 * The `modern` banner style: a dark slate card with a soft accent glow, sans-serif labels, the
 * MOTD in the pixel font on an inset panel, a status pill and a player bar.
 */
import type { Image, SKRSContext2D } from '@napi-rs/canvas';
import type { ServerStatus } from '../core/types.js';
import { mixColors, withAlpha } from './color.js';
import { fontFor } from './fonts.js';
import type { BannerOptions } from './options.js';
import { fillHorizontalGradient } from './paint.js';
import { drawLine, type Random } from './text.js';
import {
  bannerTitle,
  clipToCard,
  drawIcon,
  drawMotd,
  drawOfflineMessage,
  drawVersion,
  formatCount,
  latencyText,
  OFFLINE_RED,
  ONLINE_GREEN,
  plain,
  pxOf,
  type BannerLayout,
  type Rect,
} from './banner-parts.js';

export function drawModern(ctx: SKRSContext2D, status: ServerStatus, layout: BannerLayout, options: BannerOptions, icon: Image, random: Random): void {
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
