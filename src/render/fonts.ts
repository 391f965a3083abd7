/**
 * The fonts images are drawn with, registered once per process with @napi-rs/canvas (Skia):
 *
 * - Pixelify Sans (SIL OFL 1.1, assets/fonts/PixelifySans-OFL.txt): the pixel font for MOTDs
 *   and the classic banner. Its Latin, Latin Extended and Cyrillic subsets share one family.
 * - Noto Sans (SIL OFL 1.1, assets/fonts/NotoSans-OFL.txt): the modern banner's labels and
 *   the fallback for every character the pixel font lacks (Greek, Vietnamese, symbols).
 *
 * Skia reads the woff2 files of @fontsource directly. A font list in the `font` shorthand
 * gives per-glyph fallback: Skia walks the list, then the system fonts, for each character.
 */
import { createRequire } from 'node:module';
import { GlobalFonts } from '@napi-rs/canvas';

/** Family names of our own, so no system font or other module's registration shadows them. */
export const PIXEL_FAMILY = 'Observer Pixel';
export const SANS_FAMILY = 'Observer Sans';

const PIXEL_FILES = ['latin', 'latin-ext', 'cyrillic'].flatMap((subset) =>
  [400, 700].map((weight) => `@fontsource/pixelify-sans/files/pixelify-sans-${subset}-${weight}-normal.woff2`),
);
const SANS_FILES = ['latin', 'latin-ext', 'greek', 'greek-ext', 'cyrillic', 'cyrillic-ext', 'vietnamese'].flatMap(
  (subset) =>
    [400, 700].flatMap((weight) =>
      ['normal', 'italic'].map((style) => `@fontsource/noto-sans/files/noto-sans-${subset}-${weight}-${style}.woff2`),
    ),
);

let registered = false;

/** Registers the bundled fonts; idempotent. Throws when a font file is missing. */
export function registerRenderFonts(): void {
  if (registered) return;
  const require = createRequire(import.meta.url);
  for (const [family, files] of [
    [PIXEL_FAMILY, PIXEL_FILES],
    [SANS_FAMILY, SANS_FILES],
  ] as const) {
    for (const file of files) {
      const path = require.resolve(file);
      if (GlobalFonts.registerFromPath(path, family) === null) {
        throw new Error(`Cannot load the font file ${path}.`);
      }
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
