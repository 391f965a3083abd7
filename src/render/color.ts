/**
 * Colours as the image endpoints accept them (docs/api.md, "Images"): `#RGB` or
 * `#RRGGBB`, with or without the `#`. Everything is normalised to lowercase `#rrggbb`.
 */
import { hexToRgb, type Rgb } from '../motd/colors.js';

const HEX_COLOR = /^#?([0-9a-f]{3}|[0-9a-f]{6})$/i;

/** `#RGB` / `RGB` / `#RRGGBB` / `RRGGBB` → `#rrggbb`; anything else → null. */
export function parseHexColor(input: string): `#${string}` | null {
  const match = HEX_COLOR.exec(input);
  if (!match) return null;
  let hex = match[1]!.toLowerCase();
  if (hex.length === 3) hex = hex.replace(/./g, (c) => c + c);
  return `#${hex}`;
}

export function rgbToHex({ r, g, b }: Rgb): `#${string}` {
  const to = (v: number) => Math.max(0, Math.min(255, Math.round(v))).toString(16).padStart(2, '0');
  return `#${to(r)}${to(g)}${to(b)}`;
}

/** CSS `rgba()` text of a `#rrggbb` colour with an alpha of 0..1. */
export function withAlpha(hex: string, alpha: number): string {
  const { r, g, b } = hexToRgb(hex);
  return `rgba(${r}, ${g}, ${b}, ${alpha})`;
}

/** Linear mix of two `#rrggbb` colours: t = 0 gives `a`, t = 1 gives `b`. */
export function mixColors(a: string, b: string, t: number): `#${string}` {
  const x = hexToRgb(a);
  const y = hexToRgb(b);
  return rgbToHex({ r: x.r + (y.r - x.r) * t, g: x.g + (y.g - x.g) * t, b: x.b + (y.b - x.b) * t });
}

/** WCAG relative luminance, 0 (black) .. 1 (white). */
export function luminance(hex: string): number {
  const lin = (v: number) => {
    const c = v / 255;
    return c <= 0.039_28 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const { r, g, b } = hexToRgb(hex);
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

/**
 * Minecraft's text shadow: the same colour at a quarter of its brightness (the client divides
 * each channel by 4 when it draws the shadow pass).
 */
export function shadowOf(hex: string): string {
  const { r, g, b } = hexToRgb(hex);
  return rgbToHex({ r: Math.floor(r / 4), g: Math.floor(g / 4), b: Math.floor(b / 4) });
}
