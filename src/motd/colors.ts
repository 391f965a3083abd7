/**
 * The 16 named Minecraft colours, their `§` codes and RGB values.
 * Source: https://minecraft.wiki/w/Formatting_codes#Color_codes (Java Edition foreground colours).
 */

export const NAMED_COLORS = {
  black: { code: '0', hex: '#000000' },
  dark_blue: { code: '1', hex: '#0000aa' },
  dark_green: { code: '2', hex: '#00aa00' },
  dark_aqua: { code: '3', hex: '#00aaaa' },
  dark_red: { code: '4', hex: '#aa0000' },
  dark_purple: { code: '5', hex: '#aa00aa' },
  gold: { code: '6', hex: '#ffaa00' },
  gray: { code: '7', hex: '#aaaaaa' },
  dark_gray: { code: '8', hex: '#555555' },
  blue: { code: '9', hex: '#5555ff' },
  green: { code: 'a', hex: '#55ff55' },
  aqua: { code: 'b', hex: '#55ffff' },
  red: { code: 'c', hex: '#ff5555' },
  light_purple: { code: 'd', hex: '#ff55ff' },
  yellow: { code: 'e', hex: '#ffff55' },
  white: { code: 'f', hex: '#ffffff' },
} as const satisfies Record<string, { code: string; hex: string }>;

export type NamedColor = keyof typeof NAMED_COLORS;

/** `#rrggbb`, always lowercase six-digit hex (validated, so it is safe to put in CSS). */
export type HexColor = `#${string}`;

/** A segment colour: one of the 16 names, or an exact hex colour from a chat component. */
export type MotdColor = NamedColor | HexColor;

const NAMES = Object.keys(NAMED_COLORS) as NamedColor[];
const BY_CODE = new Map<string, NamedColor>(NAMES.map((name) => [NAMED_COLORS[name].code, name]));
const HEX_PATTERN = /^#[0-9a-f]{6}$/;

export function isNamedColor(value: string): value is NamedColor {
  return Object.prototype.hasOwnProperty.call(NAMED_COLORS, value);
}

/** The named colour of a `§` code character (`0`-`9`, `a`-`f`), if it is one. */
export function colorFromCode(code: string): NamedColor | undefined {
  return BY_CODE.get(code.toLowerCase());
}

/**
 * Accepts a chat-component `color` value: one of the 16 names or `#rrggbb`. Anything else
 * (other CSS, `red;background:url(x)`, `#fff`, non-strings) returns null, so that nothing
 * unchecked ever reaches a `style` attribute.
 */
export function parseColor(value: unknown): MotdColor | null {
  if (typeof value !== 'string' || value.length > 32) return null;
  const lower = value.trim().toLowerCase();
  if (isNamedColor(lower)) return lower;
  if (HEX_PATTERN.test(lower)) return lower as HexColor;
  return null;
}

/** `#rrggbb` for any segment colour. */
export function colorToHex(color: MotdColor): HexColor {
  return isNamedColor(color) ? NAMED_COLORS[color].hex : color;
}

/** The named colour closest to a hex colour (squared RGB distance), for `§` output. */
export function nearestNamedColor(color: MotdColor): NamedColor {
  if (isNamedColor(color)) return color;
  const rgb = hexToRgb(color);
  let best: NamedColor = 'white';
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const name of NAMES) {
    const other = hexToRgb(NAMED_COLORS[name].hex);
    const distance = (rgb.r - other.r) ** 2 + (rgb.g - other.g) ** 2 + (rgb.b - other.b) ** 2;
    if (distance < bestDistance) {
      bestDistance = distance;
      best = name;
    }
  }
  return best;
}

export interface Rgb {
  r: number;
  g: number;
  b: number;
}

/** `#rrggbb` → channels 0..255 (the one conversion; the image colours use it too). */
export function hexToRgb(hex: string): Rgb {
  const value = Number.parseInt(hex.slice(1, 7), 16);
  return { r: (value >> 16) & 0xff, g: (value >> 8) & 0xff, b: value & 0xff };
}
