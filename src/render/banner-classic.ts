/**
 * The `classic` banner style: a Minecraft-server-list look, pixel font with drop shadows over a
 * dark procedurally drawn stone texture, signal bars for the latency.
 */
import { createCanvas, type Canvas, type Image, type SKRSContext2D } from '@napi-rs/canvas';
import type { ServerStatus } from '../core/types.js';
import { mixColors, shadowOf } from './color.js';
import type { BannerOptions } from './options.js';
import { drawLine, measureLine, seededRandom, type Random } from './text.js';
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
  plain,
  pxOf,
  signalBars,
  type BannerLayout,
} from './banner-parts.js';

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

export function drawClassic(ctx: SKRSContext2D, status: ServerStatus, layout: BannerLayout, options: BannerOptions, icon: Image, random: Random): void {
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
