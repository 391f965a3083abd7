/**
 * Drawing styled Minecraft text on a canvas: colours, bold, italic, underline, strikethrough
 * and obfuscated runs, an optional Minecraft-style shadow, and truncation with an ellipsis
 * when a line is wider than its box.
 *
 * Obfuscated (`§k`) text is drawn the way the client does it: every character is replaced
 * by a random character of the same advance width. The randomness comes from the caller's
 * `random` (a seeded generator), so an image is a pure function of its inputs.
 */
import type { SKRSContext2D } from '@napi-rs/canvas';
import { colorToHex, type MotdSegment } from '../motd/index.js';
import { shadowOf } from './color.js';
import { fontFor } from './fonts.js';

export type Random = () => number;

/** mulberry32: a small, fast, seedable generator; plenty for picking glyphs. */
export function seededRandom(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** FNV-1a of a string, for seeding `seededRandom` from the text being drawn. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export interface TextRunOptions {
  kind: 'pixel' | 'sans';
  /** Font size in pixels. */
  px: number;
  /** Colour of segments without one (`#rrggbb`). */
  defaultColor: string;
  /** Draw the Minecraft drop shadow (quarter-brightness copy, offset down-right). */
  shadow?: boolean;
  random: Random;
}

// Printable ASCII is in every subset of the pixel font; obfuscated glyphs are chosen from it.
const OBFUSCATION_POOL = Array.from({ length: 0x7e - 0x21 + 1 }, (_, i) => String.fromCharCode(0x21 + i));
const widthTables = new Map<string, Map<number, string[]>>();

function widthKey(width: number): number {
  return Math.round(width * 100);
}

/** Characters of the pool grouped by advance width, per font (a handful of fonts in use). */
function widthTable(ctx: SKRSContext2D, font: string): Map<number, string[]> {
  let table = widthTables.get(font);
  if (!table) {
    table = new Map();
    ctx.font = font;
    for (const char of OBFUSCATION_POOL) {
      const key = widthKey(ctx.measureText(char).width);
      const group = table.get(key);
      if (group) group.push(char);
      else table.set(key, [char]);
    }
    if (widthTables.size > 64) widthTables.clear();
    widthTables.set(font, table);
  }
  return table;
}

/** Text with each non-space character swapped for a random one of the same width. */
export function obfuscate(ctx: SKRSContext2D, text: string, font: string, random: Random): string {
  const table = widthTable(ctx, font);
  ctx.font = font;
  let out = '';
  for (const char of text) {
    if (char.trim() === '') {
      out += char;
      continue;
    }
    const group = table.get(widthKey(ctx.measureText(char).width));
    out += group ? group[Math.floor(random() * group.length)]! : char;
  }
  return out;
}

function segmentFont(options: TextRunOptions, segment: MotdSegment): string {
  return fontFor(options.kind, options.px, { bold: segment.bold, italic: segment.italic });
}

/** Advance width of a line of segments. */
export function measureLine(ctx: SKRSContext2D, line: readonly MotdSegment[], options: Pick<TextRunOptions, 'kind' | 'px'>): number {
  let width = 0;
  for (const segment of line) {
    ctx.font = fontFor(options.kind, options.px, { bold: segment.bold, italic: segment.italic });
    width += ctx.measureText(segment.text).width;
  }
  return width;
}

const ELLIPSIS = '...';

/**
 * The longest prefix of `line` that fits in `maxWidth`, with `...` appended (in the style of
 * the last character kept) when something was cut.
 */
export function fitLine(
  ctx: SKRSContext2D,
  line: readonly MotdSegment[],
  maxWidth: number,
  options: Pick<TextRunOptions, 'kind' | 'px'>,
): MotdSegment[] {
  if (measureLine(ctx, line, options) <= maxWidth) return [...line];
  const out: MotdSegment[] = [];
  let used = 0;
  for (const segment of line) {
    const font = fontFor(options.kind, options.px, { bold: segment.bold, italic: segment.italic });
    ctx.font = font;
    const ellipsis = ctx.measureText(ELLIPSIS).width;
    const chars = [...segment.text];
    // Binary search on the number of characters of this segment that fit with the ellipsis.
    let lo = 0;
    let hi = chars.length;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (used + ctx.measureText(chars.slice(0, mid).join('')).width + ellipsis <= maxWidth) lo = mid;
      else hi = mid - 1;
    }
    const whole = used + ctx.measureText(segment.text).width;
    // Keep the whole segment only if the ellipsis after it would still fit; otherwise cut here.
    if (lo === chars.length && whole + ellipsis <= maxWidth) {
      out.push(segment);
      used = whole;
      continue;
    }
    const kept = chars.slice(0, lo).join('').trimEnd();
    out.push({ ...segment, text: kept + ELLIPSIS, obfuscated: segment.obfuscated && kept.length > 0 });
    return out;
  }
  return out;
}

/**
 * Draws one line with its left end at `x` and its alphabetic baseline at `y`; returns the
 * width drawn. Lines wider than `maxWidth` are cut with an ellipsis.
 */
export function drawLine(
  ctx: SKRSContext2D,
  line: readonly MotdSegment[],
  x: number,
  y: number,
  maxWidth: number,
  options: TextRunOptions,
): number {
  const fitted = fitLine(ctx, line, maxWidth, options);
  const shadowOffset = Math.max(1, Math.round(options.px / 10));
  const thickness = Math.max(1, Math.round(options.px / 12));
  ctx.textBaseline = 'alphabetic';
  ctx.textAlign = 'left';
  let cursor = x;
  for (const segment of fitted) {
    const font = segmentFont(options, segment);
    ctx.font = font;
    const color = segment.color === null ? options.defaultColor : colorToHex(segment.color);
    const text = segment.obfuscated ? obfuscate(ctx, segment.text, font, options.random) : segment.text;
    const width = ctx.measureText(text).width;
    const passes: Array<[string, number]> = options.shadow ? [[shadowOf(color), shadowOffset], [color, 0]] : [[color, 0]];
    for (const [fill, offset] of passes) {
      ctx.fillStyle = fill;
      ctx.fillText(text, cursor + offset, y + offset);
      // Decorations are snapped to whole pixels so they stay as crisp as the pixel font.
      if (segment.underlined) {
        ctx.fillRect(Math.round(cursor + offset), Math.round(y + offset + thickness), Math.round(width), thickness);
      }
      if (segment.strikethrough) {
        ctx.fillRect(Math.round(cursor + offset), Math.round(y + offset - options.px * 0.3), Math.round(width), thickness);
      }
    }
    cursor += width;
  }
  return cursor - x;
}

/**
 * The largest font size from `max` down to `min` at which every line fits `width` and all
 * lines fit `height`; lines still too wide at `min` are cut with an ellipsis when drawn.
 */
export function fitFontSize(
  ctx: SKRSContext2D,
  lines: readonly (readonly MotdSegment[])[],
  kind: 'pixel' | 'sans',
  box: { width: number; height: number },
  range: { min: number; max: number; lineHeight: number },
): number {
  const count = Math.max(1, lines.length);
  let px = Math.min(range.max, Math.floor(box.height / (count * range.lineHeight)));
  for (; px > range.min; px -= 1) {
    if (lines.every((line) => measureLine(ctx, line, { kind, px }) <= box.width)) break;
  }
  return Math.max(range.min, px);
}
