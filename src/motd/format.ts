/**
 * Segments → the MOTD forms the API returns (`raw`, `clean`, `html`, `raw_lines`,
 * `clean_lines`), plus the cleaning used for version names and player names.
 * Pure functions: no I/O, no state.
 */
import type { Motd, MotdSpan } from '../core/types.js';
import { NAMED_COLORS, colorToHex, nearestNamedColor } from './colors.js';
import {
  FLAG_CODES,
  MAX_TEXT_LENGTH,
  STYLE_FLAGS,
  chatComponentToSegments,
  parseFormattedText,
  sanitizeText,
  truncateText,
  type MotdSegment,
} from './segments.js';

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes `& < > " '` so that text is safe in HTML content and in quoted attributes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char] as string);
}

/**
 * `§`-coded text for segments. Hex colours have no `§` code, so the nearest of the 16 named
 * colours is written instead (the exact colour survives in `html` and in the segments).
 */
export function segmentsToRaw(segments: readonly MotdSegment[]): string {
  let out = '';
  let code: string | null = null;
  let flags = { obfuscated: false, bold: false, strikethrough: false, underlined: false, italic: false };
  for (const segment of segments) {
    const nextCode = segment.color === null ? null : NAMED_COLORS[nearestNamedColor(segment.color)].code;
    const flagDropped = STYLE_FLAGS.some((flag) => flags[flag] && !segment[flag]);
    if (nextCode !== code || flagDropped) {
      // A colour code (or §r) clears every style in the Java client, so restate the styles after it.
      out += nextCode === null ? '§r' : `§${nextCode}`;
      for (const flag of STYLE_FLAGS) if (segment[flag]) out += `§${FLAG_CODES[flag]}`;
    } else {
      for (const flag of STYLE_FLAGS) if (segment[flag] && !flags[flag]) out += `§${FLAG_CODES[flag]}`;
    }
    out += segment.text;
    code = nextCode;
    flags = {
      obfuscated: segment.obfuscated,
      bold: segment.bold,
      strikethrough: segment.strikethrough,
      underlined: segment.underlined,
      italic: segment.italic,
    };
  }
  return out;
}

/** Text only, no codes. */
export function segmentsToClean(segments: readonly MotdSegment[]): string {
  let out = '';
  for (const segment of segments) out += segment.text;
  return out;
}

/**
 * One `<span>` per styled segment, text escaped, `\n` kept as is (render inside
 * `white-space: pre-wrap`, which also keeps the spaces MOTDs use for centring). Colours are
 * always `#rrggbb` built from validated values; obfuscated text gets `class="mc-obfuscated"`
 * (there is no CSS for random glyphs; a page may animate that class). Spans are flat, never nested.
 */
export function segmentsToHtml(segments: readonly MotdSegment[]): string {
  let out = '';
  for (const segment of segments) {
    if (segment.text.length === 0) continue;
    const styles: string[] = [];
    if (segment.color !== null) styles.push(`color: ${colorToHex(segment.color)}`);
    if (segment.bold) styles.push('font-weight: bold');
    if (segment.italic) styles.push('font-style: italic');
    const decorations: string[] = [];
    if (segment.underlined) decorations.push('underline');
    if (segment.strikethrough) decorations.push('line-through');
    if (decorations.length > 0) styles.push(`text-decoration: ${decorations.join(' ')}`);
    const text = escapeHtml(segment.text);
    if (styles.length === 0 && !segment.obfuscated) {
      out += text;
      continue;
    }
    const classAttribute = segment.obfuscated ? ' class="mc-obfuscated"' : '';
    const styleAttribute = styles.length > 0 ? ` style="${styles.join('; ')}"` : '';
    out += `<span${classAttribute}${styleAttribute}>${text}</span>`;
  }
  return out;
}

function lines(text: string): string[] {
  return text.length === 0 ? [] : text.split('\n');
}

/** Segments as the API hands them out: empty runs dropped, every colour as `#rrggbb`. */
export function segmentsToSpans(segments: readonly MotdSegment[]): MotdSpan[] {
  return segments
    .filter((segment) => segment.text.length > 0)
    .map((segment) => ({ ...segment, color: segment.color === null ? null : colorToHex(segment.color) }));
}

/** Builds the API's Motd object from segments (and the raw text when the input was one). */
export function formatSegments(segments: readonly MotdSegment[], raw = segmentsToRaw(segments)): Motd {
  const clean = segmentsToClean(segments);
  return {
    raw,
    clean,
    html: segmentsToHtml(segments),
    raw_lines: lines(raw),
    clean_lines: lines(clean),
    segments: segmentsToSpans(segments),
  };
}

/**
 * The Motd object for a server's MOTD, which may be a `§` string (legacy Java, Bedrock, many
 * Java servers) or a JSON chat component (object or array). Anything else gives an empty MOTD.
 * A string's `raw` is the string itself (control characters removed, capped at 64 Ki
 * characters); a component's `raw` is built from its segments. An empty MOTD has no lines.
 */
export function formatMotd(input: unknown): Motd {
  if (typeof input === 'string') {
    const raw = truncateText(sanitizeText(truncateText(input, MAX_TEXT_LENGTH * 2)), MAX_TEXT_LENGTH);
    return formatSegments(parseFormattedText(raw), raw);
  }
  if (typeof input === 'number' || typeof input === 'boolean') return formatMotd(String(input));
  if (typeof input === 'object' && input !== null) return formatSegments(chatComponentToSegments(input));
  return formatSegments([]);
}

/**
 * One line of plain text for server-supplied labels (version names, player-sample names, mod
 * ids, Bedrock fields): `§` codes and control characters removed, line breaks turned into
 * spaces, trimmed, capped at `maxLength` characters. Non-strings give ''.
 */
export function cleanServerText(value: unknown, maxLength = 256): string {
  if (typeof value !== 'string' && typeof value !== 'number') return '';
  const text = truncateText(String(value), Math.max(maxLength * 4, 1024));
  const clean = segmentsToClean(parseFormattedText(text)).replace(/\n+/g, ' ').trim();
  return truncateText(clean, maxLength);
}

/** `&`-style codes (as typed in chat plugins and `/banner/motd?motd=`) to `§` codes. `&&` is left alone. */
export function ampersandToSection(text: string): string {
  return text.replace(/&([0-9a-fk-orx])/gi, (_match, code: string) => `§${code.toLowerCase()}`);
}
