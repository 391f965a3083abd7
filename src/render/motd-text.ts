/**
 * MOTD text → the styled lines the renderer draws, on top of the MOTD module (src/motd).
 *
 * A status carries its MOTD as `raw` (`§` codes, where hex colours have been replaced by the
 * nearest of the 16 named colours) and `html` (flat spans with the exact colours). The banner
 * wants exact colours, so it reads them back from `html` when that reading reproduces `clean`
 * exactly, and falls back to `raw` otherwise.
 */
import type { Motd } from '../core/types.js';
import {
  ampersandToSection,
  parseColor,
  parseFormattedText,
  PLAIN_STYLE,
  splitSegmentsIntoLines,
  type MotdSegment,
  type MotdStyle,
} from '../motd/index.js';

/** Lines and characters of MOTD a banner ever looks at: server text is capped before drawing. */
export const MAX_MOTD_LINES = 4;
export const MAX_MOTD_LINE_LENGTH = 160;

const MAX_HTML_LENGTH = 64 * 1024;

const ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" };

function unescapeHtml(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#39);/g, (_m, name: string) => ENTITIES[name] ?? '');
}

// The exact shapes segmentsToHtml writes: flat spans or bare escaped text.
const HTML_PIECE = /<span( class="mc-obfuscated")?(?: style="([^"<>]*)")?>([^<]*)<\/span>|([^<]+)/gy;

function styleFromCss(css: string | undefined, obfuscated: boolean): MotdStyle {
  const style: MotdStyle = { ...PLAIN_STYLE, obfuscated };
  for (const declaration of (css ?? '').split(';')) {
    const [name, value] = declaration.split(':').map((s) => s.trim()) as [string, string | undefined];
    if (name === 'color') style.color = parseColor(value);
    else if (name === 'font-weight') style.bold = value === 'bold';
    else if (name === 'font-style') style.italic = value === 'italic';
    else if (name === 'text-decoration') {
      const parts = (value ?? '').split(/\s+/);
      style.underlined = parts.includes('underline');
      style.strikethrough = parts.includes('line-through');
    }
  }
  return style;
}

/** The inverse of the MOTD module's `segmentsToHtml`, or null when `html` is not of that form. */
export function segmentsFromMotdHtml(html: string): MotdSegment[] | null {
  if (html.length > MAX_HTML_LENGTH) return null;
  const segments: MotdSegment[] = [];
  HTML_PIECE.lastIndex = 0;
  while (HTML_PIECE.lastIndex < html.length) {
    const match = HTML_PIECE.exec(html);
    if (!match) return null;
    if (match[4] !== undefined) {
      segments.push({ ...PLAIN_STYLE, text: unescapeHtml(match[4]) });
    } else {
      segments.push({ ...styleFromCss(match[2], match[1] !== undefined), text: unescapeHtml(match[3] ?? '') });
    }
  }
  return segments;
}

/** Segments of a status MOTD: exact colours from `html` when it agrees with `clean`, else `raw`. */
export function segmentsOfMotd(motd: Motd): MotdSegment[] {
  const fromHtml = segmentsFromMotdHtml(motd.html);
  if (fromHtml && fromHtml.map((s) => s.text).join('') === motd.clean) return fromHtml;
  return parseFormattedText(motd.raw);
}

/**
 * `&` codes and the `&#rrggbb` / `§#rrggbb` hex shorthand of chat plugins → `§` codes, as
 * `/banner/motd` accepts them. `&&` stays as it is.
 */
export function userMotdToSection(text: string): string {
  const hex = text.replace(/[&§]#([0-9a-f]{6})/gi, (_m, digits: string) =>
    `§x${[...digits.toLowerCase()].map((d) => `§${d}`).join('')}`,
  );
  return ampersandToSection(hex);
}

/** Lines to draw: at most `maxLines` of at most MAX_MOTD_LINE_LENGTH characters each. */
export function motdLines(segments: readonly MotdSegment[], maxLines = MAX_MOTD_LINES): MotdSegment[][] {
  const lines = splitSegmentsIntoLines(segments).slice(0, maxLines);
  return lines.map((line) => {
    let left = MAX_MOTD_LINE_LENGTH;
    const out: MotdSegment[] = [];
    for (const segment of line) {
      if (left <= 0) break;
      const chars = [...segment.text];
      const text = chars.slice(0, left).join('');
      left -= Math.min(chars.length, left);
      out.push({ ...segment, text });
    }
    return out;
  });
}
