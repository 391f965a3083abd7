/**
 * Gradients drawn as solid one-pixel bands instead of canvas gradients.
 *
 * Skia dithers gradients: every pixel gets a little noise, which PNG's deflate cannot
 * compress. A horizontal gradient of solid columns makes every row a copy of the one above,
 * which deflate stores as back-references: a smaller file, faster to encode.
 */
import { createCanvas, type Canvas, type SKRSContext2D } from '@napi-rs/canvas';
import { mixColors } from './color.js';

/** Colour stops at offsets 0..1, in order. */
export type Stops = ReadonlyArray<readonly [offset: number, color: string]>;

function colorAt(stops: Stops, t: number): string {
  const first = stops[0]!;
  if (t <= first[0]) return first[1];
  for (let i = 1; i < stops.length; i++) {
    const [o1, c1] = stops[i]!;
    const [o0, c0] = stops[i - 1]!;
    if (t <= o1) return mixColors(c0, c1, o1 === o0 ? 1 : (t - o0) / (o1 - o0));
  }
  return stops[stops.length - 1]![1];
}

function drawColumns(ctx: SKRSContext2D, width: number, height: number, stops: Stops): void {
  let run = 0;
  let runColor = colorAt(stops, 0);
  for (let i = 1; i <= width; i++) {
    const color = i < width ? colorAt(stops, width > 1 ? i / (width - 1) : 0) : '';
    if (color !== runColor) {
      ctx.fillStyle = runColor;
      ctx.fillRect(run, 0, i - run, height);
      run = i;
      runColor = color;
    }
  }
}

// Drawn strips by size and stops: a few sizes times the accent colours in use. Bounded, since
// the accent colour comes from the query string.
const strips = new Map<string, Canvas>();
const MAX_STRIPS = 64;

/** Fills a rectangle with a left-to-right gradient of solid one-pixel columns. */
export function fillHorizontalGradient(ctx: SKRSContext2D, x: number, y: number, width: number, height: number, stops: Stops): void {
  const key = `${width}x${height}|${stops.map(([o, c]) => `${o}${c}`).join('|')}`;
  let strip = strips.get(key);
  if (!strip) {
    strip = createCanvas(width, height);
    drawColumns(strip.getContext('2d'), width, height, stops);
    if (strips.size >= MAX_STRIPS) strips.clear();
    strips.set(key, strip);
  }
  ctx.drawImage(strip, x, y);
}
