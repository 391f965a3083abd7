/**
 * The font files images are drawn with (the list only; ./fonts.ts registers them with Skia):
 *
 * - Pixelify Sans (SIL OFL 1.1, assets/fonts/PixelifySans-OFL.txt): the pixel font for MOTDs
 *   and the classic banner. Its Latin, Latin Extended and Cyrillic subsets share one family.
 * - Noto Sans (SIL OFL 1.1, assets/fonts/NotoSans-OFL.txt): the modern banner's labels and
 *   the fallback for every character the pixel font lacks (Greek, Vietnamese, symbols).
 */
import { createRequire } from 'node:module';

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

/** Every font file with its family, as absolute paths; throws when one is not installed. */
export function renderFontFiles(): Array<{ family: string; path: string }> {
  const require = createRequire(import.meta.url);
  return [
    ...PIXEL_FILES.map((file) => ({ family: PIXEL_FAMILY, path: require.resolve(file) })),
    ...SANS_FILES.map((file) => ({ family: SANS_FAMILY, path: require.resolve(file) })),
  ];
}
