/**
 * MOTD formatting: Minecraft chat components and `§` strings → raw / clean / html / lines.
 *
 * For the API's Motd object use `formatMotd(input)`.
 *
 * For drawing (banners, widget) use the segments API:
 *
 * ```ts
 * import { formatMotd, parseFormattedText, chatComponentToSegments, splitSegmentsIntoLines, colorToHex } from '../motd/index.js';
 * const segments = parseFormattedText(status.motd.raw);          // or chatComponentToSegments(json)
 * for (const line of splitSegmentsIntoLines(segments)) {
 *   for (const s of line) draw(s.text, s.color ? colorToHex(s.color) : defaultColour, s.bold, s.italic,
 *                              s.underlined, s.strikethrough, s.obfuscated);
 * }
 * ```
 *
 * A segment is `{ text, color, bold, italic, underlined, strikethrough, obfuscated }`; `color`
 * is one of the 16 names (`'gold'`, `'dark_red'`, …), an exact `#rrggbb`, or null (default
 * colour). `text` never contains `§` codes. For `&` codes (as in `/banner/motd`), pass the
 * text through `ampersandToSection` first.
 *
 * All functions are pure and bounded: 64 Ki characters of text, component depth 32,
 * 8192 component nodes; anything beyond is dropped, never an exception.
 */
export {
  NAMED_COLORS,
  colorFromCode,
  colorToHex,
  hexToRgb,
  isNamedColor,
  nearestNamedColor,
  parseColor,
  type HexColor,
  type MotdColor,
  type NamedColor,
  type Rgb,
} from './colors.js';
export {
  FLAG_CODES,
  MAX_COMPONENT_DEPTH,
  MAX_COMPONENT_NODES,
  MAX_TEXT_LENGTH,
  PLAIN_STYLE,
  STYLE_FLAGS,
  chatComponentToSegments,
  parseFormattedText,
  sameStyle,
  sanitizeText,
  splitSegmentsIntoLines,
  type MotdSegment,
  type MotdStyle,
  type StyleFlag,
} from './segments.js';
export {
  ampersandToSection,
  cleanServerText,
  escapeHtml,
  formatMotd,
  formatSegments,
  segmentsToClean,
  segmentsToHtml,
  segmentsToRaw,
  segmentsToSpans,
} from './format.js';
