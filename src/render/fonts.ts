/**
 * Registers the fonts images are drawn with (./font-files.ts) once per process with
 * @napi-rs/canvas (Skia). Skia reads the woff2 files of @fontsource directly. A font list in
 * the `font` shorthand gives per-glyph fallback: Skia walks the list, then the system fonts,
 * for each character.
 */
import { GlobalFonts } from '@napi-rs/canvas';
import { PIXEL_FAMILY, SANS_FAMILY, renderFontFiles } from './font-files.js';

export { PIXEL_FAMILY, SANS_FAMILY } from './font-files.js';

let registered = false;

/** Registers the bundled fonts; idempotent. Throws when a font file is missing. */
export function registerRenderFonts(): void {
  if (registered) return;
  for (const { family, path } of renderFontFiles()) {
    if (GlobalFonts.registerFromPath(path, family) === null) {
      throw new Error(`Cannot load the font file ${path}.`);
    }
  }
  registered = true;
}

export interface FontStyle {
  bold?: boolean;
  italic?: boolean;
}

/**
 * A canvas `font` value. Pixel text falls back to Noto Sans for characters Pixelify Sans has
 * not got; Skia synthesises the italic of the pixel font (it has no italic face).
 */
export function fontFor(kind: 'pixel' | 'sans', px: number, style: FontStyle = {}): string {
  const families = kind === 'pixel' ? `"${PIXEL_FAMILY}", "${SANS_FAMILY}"` : `"${SANS_FAMILY}"`;
  return `${style.italic ? 'italic ' : ''}${style.bold ? 700 : 400} ${px}px ${families}`;
}
