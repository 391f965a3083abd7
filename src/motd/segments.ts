/**
 * Formatted text as a flat list of styled segments: the one model every MOTD output (raw,
 * clean, html) and every renderer (banners, widget) is built from.
 *
 * Two inputs produce segments:
 * - `§` strings (legacy formatting codes): https://minecraft.wiki/w/Formatting_codes
 * - JSON chat components (`text`, `translate` + `with`, `extra`, arrays, inherited styles):
 *   https://minecraft.wiki/w/Text_component_format
 *
 * Both are hostile input from a server. Text is capped (MAX_TEXT_LENGTH characters in
 * total), components are walked at most MAX_COMPONENT_DEPTH levels deep and at most
 * MAX_COMPONENT_NODES nodes in total: whatever lies beyond is dropped (so a 10,000-deep
 * `extra` chain yields the text of its first 32 levels and no stack overflow).
 */
import { isObject } from '../core/json.js';
import { colorFromCode, parseColor, type HexColor, type MotdColor } from './colors.js';

/** At most this many characters of text, whatever the input (64 Ki). */
export const MAX_TEXT_LENGTH = 64 * 1024;
/** Chat components nested deeper than this are dropped. */
export const MAX_COMPONENT_DEPTH = 32;
/** At most this many component nodes are visited in one input. */
export const MAX_COMPONENT_NODES = 8192;

export interface MotdStyle {
  /** Named colour, exact `#rrggbb`, or null for the default text colour. */
  color: MotdColor | null;
  bold: boolean;
  italic: boolean;
  underlined: boolean;
  strikethrough: boolean;
  /** Rendered by Minecraft as random changing glyphs. */
  obfuscated: boolean;
}

/** A run of text in one style. `text` may contain `\n`; it never contains `§` codes. */
export interface MotdSegment extends MotdStyle {
  text: string;
}

export type StyleFlag = 'bold' | 'italic' | 'underlined' | 'strikethrough' | 'obfuscated';

/** Style flags in the order their `§` codes are written. */
export const STYLE_FLAGS: readonly StyleFlag[] = ['obfuscated', 'bold', 'strikethrough', 'underlined', 'italic'];

/** `§k` obfuscated, `§l` bold, `§m` strikethrough, `§n` underline, `§o` italic (`§r` resets). */
export const FLAG_CODES: Readonly<Record<StyleFlag, string>> = {
  obfuscated: 'k',
  bold: 'l',
  strikethrough: 'm',
  underlined: 'n',
  italic: 'o',
};

const FLAG_BY_CODE = new Map<string, StyleFlag>(
  (Object.entries(FLAG_CODES) as [StyleFlag, string][]).map(([flag, code]) => [code, flag]),
);

export const PLAIN_STYLE: Readonly<MotdStyle> = Object.freeze({
  color: null,
  bold: false,
  italic: false,
  underlined: false,
  strikethrough: false,
  obfuscated: false,
});

export function sameStyle(a: MotdStyle, b: MotdStyle): boolean {
  return (
    a.color === b.color &&
    a.bold === b.bold &&
    a.italic === b.italic &&
    a.underlined === b.underlined &&
    a.strikethrough === b.strikethrough &&
    a.obfuscated === b.obfuscated
  );
}

// C0 controls except \n, DEL and C1 controls: never meaningful in a MOTD, unsafe in logs and HTML.
const CONTROL_CHARS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** Normalises line breaks to `\n`, turns tabs into spaces and drops other control characters. */
export function sanitizeText(text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(/\t/g, ' ').replace(CONTROL_CHARS, '');
}

/** Cuts `text` to `max` UTF-16 units without leaving half a surrogate pair. */
export function truncateText(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = text.slice(0, max);
  const last = cut.charCodeAt(cut.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return cut;
}

function pushSegment(out: MotdSegment[], text: string, style: MotdStyle): void {
  if (text.length === 0) return;
  const last = out[out.length - 1];
  if (last && sameStyle(last, style)) {
    last.text += text;
    return;
  }
  out.push({ text, ...styleCopy(style) });
}

function styleCopy(style: MotdStyle): MotdStyle {
  return {
    color: style.color,
    bold: style.bold,
    italic: style.italic,
    underlined: style.underlined,
    strikethrough: style.strikethrough,
    obfuscated: style.obfuscated,
  };
}

const HEX_DIGIT = /^[0-9a-f]$/i;

/** BungeeCord/Spigot hex colour: `§x§r§r§g§g§b§b` starting at `at` (just after the `x`). */
function bungeeHexAt(text: string, at: number): HexColor | null {
  if (at + 12 > text.length) return null;
  let hex = '#';
  for (let i = 0; i < 6; i++) {
    const sign = text[at + i * 2];
    const digit = text[at + i * 2 + 1] as string;
    if (sign !== '§' || !HEX_DIGIT.test(digit)) return null;
    hex += digit.toLowerCase();
  }
  return hex as HexColor;
}

/**
 * Parses a `§`-formatted string into segments, starting from `base` (the style of the chat
 * component holding the text; plain by default).
 *
 * Follows the Java Edition client: a colour code sets the colour and clears bold, italic,
 * underline, strikethrough and obfuscated; `§k`-`§o` add a style; `§r` returns to `base`;
 * an unknown code is consumed and ignored; a trailing lone `§` is dropped. `§x§r§r§g§g§b§b`
 * (BungeeCord hex) sets an exact colour. Control characters are removed and the text is
 * capped at MAX_TEXT_LENGTH characters.
 */
export function parseFormattedText(text: string, base: MotdStyle = PLAIN_STYLE): MotdSegment[] {
  const out: MotdSegment[] = [];
  appendFormatted(out, truncateText(sanitizeText(text), MAX_TEXT_LENGTH), base);
  return out;
}

/** Parses already sanitized text into `out`. */
function appendFormatted(out: MotdSegment[], text: string, base: MotdStyle): void {
  let style: MotdStyle = base;
  let start = 0;
  let i = 0;
  while (i < text.length) {
    if (text.charCodeAt(i) !== 0xa7 /* § */) {
      i += 1;
      continue;
    }
    pushSegment(out, text.slice(start, i), style);
    const next = text[i + 1];
    if (next === undefined) {
      start = i = text.length;
      break;
    }
    if (next === '\n') {
      // Keep the line break so that raw and clean have the same lines.
      start = i = i + 1;
      continue;
    }
    const code = next.toLowerCase();
    let skip = 2;
    const color = colorFromCode(code);
    const flag = FLAG_BY_CODE.get(code);
    if (color) {
      style = { ...PLAIN_STYLE, color };
    } else if (flag) {
      style = { ...style, [flag]: true };
    } else if (code === 'r') {
      style = base;
    } else if (code === 'x') {
      const hex = bungeeHexAt(text, i + 2);
      if (hex) {
        style = { ...PLAIN_STYLE, color: hex };
        skip += 12;
      }
    }
    i += skip;
    start = i;
  }
  pushSegment(out, text.slice(start), style);
}

interface WalkState {
  out: MotdSegment[];
  textLeft: number;
  nodesLeft: number;
}

function appendText(state: WalkState, text: string, style: MotdStyle): void {
  if (state.textLeft <= 0 || text.length === 0) return;
  const clean = truncateText(sanitizeText(truncateText(text, state.textLeft * 2)), state.textLeft);
  state.textLeft -= clean.length;
  appendFormatted(state.out, clean, style);
}

type Component = Record<string, unknown>;

/**
 * A style flag as the vanilla client reads it (Gson `getAsBoolean`, i.e. Java's
 * `Boolean.parseBoolean` for strings): `true`, or a string equal to "true" in any case, is
 * true; any other string is false, as plugins send `"bold": "false"`; absent or another type
 * inherits.
 */
function flag(value: unknown, inherited: boolean): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string') return value.toLowerCase() === 'true';
  return inherited;
}

function styleOf(node: Component, parent: MotdStyle): MotdStyle {
  return {
    // `reset` is the default colour, not the parent's (ChatFormatting.RESET has no colour); an
    // invalid colour is dropped: the component keeps its parent's colour.
    color: typeof node.color === 'string' && node.color.trim().toLowerCase() === 'reset' ? PLAIN_STYLE.color : (parseColor(node.color) ?? parent.color),
    bold: flag(node.bold, parent.bold),
    italic: flag(node.italic, parent.italic),
    underlined: flag(node.underlined, parent.underlined),
    strikethrough: flag(node.strikethrough, parent.strikethrough),
    obfuscated: flag(node.obfuscated, parent.obfuscated),
  };
}

function visit(state: WalkState, node: unknown, parent: MotdStyle, depth: number): void {
  if (depth > MAX_COMPONENT_DEPTH || state.nodesLeft <= 0 || state.textLeft <= 0) return;
  state.nodesLeft -= 1;
  if (typeof node === 'string') return appendText(state, node, parent);
  if (typeof node === 'number' || typeof node === 'boolean') return appendText(state, String(node), parent);
  if (Array.isArray(node)) {
    // An array is its first element followed by the others as siblings inheriting its style.
    if (node.length === 0) return;
    const first: unknown = node[0];
    const shared = isObject(first) ? styleOf(first, parent) : parent;
    visit(state, first, parent, depth + 1);
    for (let i = 1; i < node.length && state.nodesLeft > 0 && state.textLeft > 0; i++) {
      visit(state, node[i], shared, depth + 1);
    }
    return;
  }
  if (!isObject(node)) return;
  const style = styleOf(node, parent);
  const text = node.text;
  if (typeof text === 'string' || typeof text === 'number' || typeof text === 'boolean') {
    appendText(state, String(text), style);
  } else if (typeof node.translate === 'string') {
    visitTranslate(state, node, style, depth);
  } else if (typeof node.selector === 'string') {
    appendText(state, node.selector, style);
  } else if (typeof node.keybind === 'string') {
    appendText(state, node.keybind, style);
  } else if (isObject(node.score) && typeof node.score.value === 'string') {
    appendText(state, node.score.value, style);
  }
  const extra = node.extra;
  if (Array.isArray(extra)) {
    for (let i = 0; i < extra.length && state.nodesLeft > 0 && state.textLeft > 0; i++) {
      visit(state, extra[i], style, depth + 1);
    }
  }
}

// Java format specifiers as the client reads them: %s, %d, %1$s, %% (TranslatableContents).
const FORMAT_SPECIFIER = /%(?:(\d+)\$)?([A-Za-z%])/g;

/**
 * `translate` + `with`: the service has no language files, so the template is the
 * component's `fallback` when it has one, otherwise the key itself; `%s`/`%n$s` are replaced
 * by the rendered arguments, `%%` by `%`. Missing arguments render as nothing.
 */
function visitTranslate(state: WalkState, node: Component, style: MotdStyle, depth: number): void {
  const template = typeof node.fallback === 'string' ? node.fallback : (node.translate as string);
  const args: unknown[] = Array.isArray(node.with) ? node.with : [];
  let next = 0;
  let last = 0;
  FORMAT_SPECIFIER.lastIndex = 0;
  for (const match of template.matchAll(FORMAT_SPECIFIER)) {
    if (state.nodesLeft <= 0 || state.textLeft <= 0) return;
    appendText(state, template.slice(last, match.index), style);
    last = match.index + match[0].length;
    const kind = match[2];
    if (kind === '%') {
      appendText(state, '%', style);
    } else if (kind === 's' || kind === 'd') {
      const index = match[1] !== undefined ? Number(match[1]) - 1 : next++;
      if (index >= 0 && index < args.length) visit(state, args[index], style, depth + 1);
    } else {
      appendText(state, match[0], style);
    }
  }
  appendText(state, template.slice(last), style);
}

/**
 * Flattens a chat component (object, array, string or number) into segments, applying style
 * inheritance, `§` codes inside `text`, `translate`/`with` and `extra`. Colours other than
 * the 16 names and `#rrggbb` are dropped. Depth, node count and text length are capped.
 */
export function chatComponentToSegments(component: unknown): MotdSegment[] {
  const state: WalkState = { out: [], textLeft: MAX_TEXT_LENGTH, nodesLeft: MAX_COMPONENT_NODES };
  visit(state, component, PLAIN_STYLE, 0);
  return state.out;
}

/** Splits segments at `\n` into lines (a renderer draws one line per entry). */
export function splitSegmentsIntoLines(segments: readonly MotdSegment[]): MotdSegment[][] {
  const lines: MotdSegment[][] = [[]];
  for (const segment of segments) {
    const parts = segment.text.split('\n');
    parts.forEach((part, index) => {
      if (index > 0) lines.push([]);
      if (part.length > 0) (lines[lines.length - 1] as MotdSegment[]).push({ ...segment, text: part });
    });
  }
  return lines;
}
