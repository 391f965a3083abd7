/**
 * The MOTD banner (`/banner/motd`): 800x180, the given text with its `§`/`&` codes drawn in
 * the pixel font with Minecraft's drop shadow, centred on a dark card tinted by the accent
 * colour. No server is queried. Pure: the same text and colours give the same bytes.
 */
import type { Canvas } from '@napi-rs/canvas';
import { parseFormattedText } from '../motd/index.js';
import { mixColors } from './color.js';
import { fillHorizontalGradient } from './paint.js';
import { registerRenderFonts } from './fonts.js';
import { motdLines, userMotdToSection } from './motd-text.js';
import { MAX_MOTD_PARAMETER_LENGTH, MOTD_BANNER_HEIGHT, MOTD_BANNER_WIDTH, type MotdBannerOptions } from './options.js';
import { encodePng } from './png.js';
import { drawOn } from './surface.js';
import { drawLine, fitFontSize, hashString, measureLine, seededRandom } from './text.js';

export { MAX_MOTD_PARAMETER_LENGTH, MOTD_BANNER_HEIGHT, MOTD_BANNER_WIDTH, type MotdBannerOptions } from './options.js';

const MAX_LINES = 4;

/**
 * Lines of the text as a user types it: `§` or `&` codes (`&#rrggbb` hex too), and a line
 * break either as a real newline or as the two characters `\n`.
 */
function userLines(text: string) {
  const normalised = userMotdToSection(text.slice(0, MAX_MOTD_PARAMETER_LENGTH).replace(/\\n/g, '\n'));
  const lines = motdLines(parseFormattedText(normalised), MAX_LINES);
  while (lines.length > 1 && lines[lines.length - 1]!.every((s) => s.text.trim() === '')) lines.pop();
  return lines;
}

/** Draws the MOTD banner on `canvas` (MOTD_BANNER_WIDTH by MOTD_BANNER_HEIGHT, cleared). */
function drawMotdBanner(canvas: Canvas, text: string, options: MotdBannerOptions): void {
  registerRenderFonts();
  const width = MOTD_BANNER_WIDTH;
  const height = MOTD_BANNER_HEIGHT;
  const ctx = canvas.getContext('2d');

  // The accent fading into near-black from left to right.
  fillHorizontalGradient(ctx, 0, 0, width, height, [
    [0, mixColors(options.accentColor, '#0b0f17', 0.7)],
    [0.55, '#0d1119'],
    [1, '#0a0d14'],
  ]);
  // An accent rule along the bottom edge.
  ctx.fillStyle = options.accentColor;
  ctx.fillRect(0, height - 4, width, 4);

  const lines = userLines(text);
  const box = { width: width - 64, height: height - 44 };
  const lineHeight = 1.3;
  const px = fitFontSize(ctx, lines, 'pixel', box, { min: 14, max: 32, lineHeight });
  const step = px * lineHeight;
  const top = (height - 4 - step * lines.length) / 2;
  const random = seededRandom(hashString(text));
  lines.forEach((line, i) => {
    const lineWidth = Math.min(box.width, measureLine(ctx, line, { kind: 'pixel', px }));
    const x = Math.round((width - lineWidth) / 2);
    drawLine(ctx, line, x, top + step * i + px * 0.95, box.width, {
      kind: 'pixel',
      px,
      defaultColor: options.textColor,
      shadow: true,
      random,
    });
  });
}

/** The MOTD banner as PNG. */
export async function renderMotdBanner(text: string, options: MotdBannerOptions): Promise<Buffer> {
  return drawOn(MOTD_BANNER_WIDTH, MOTD_BANNER_HEIGHT, (canvas) => {
    drawMotdBanner(canvas, text, options);
    return encodePng(canvas);
  });
}
