/**
 * The widget's web fonts: latin, normal-style woff2 files of the @fontsource packages
 * (SIL Open Font License 1.1, see each package's LICENSE), served by Observer itself at
 * `{api}/widget/fonts/{file}`, so that an embedded widget never asks another origin for anything.
 */
import type { WidgetFont } from './options.js';

/** The weights the widget's stylesheet uses. */
export const FONT_WEIGHTS = [400, 500, 600, 700] as const;

/** npm package of each font. */
export const FONT_PACKAGES: Readonly<Record<WidgetFont, string>> = {
  Inter: '@fontsource/inter',
  Roboto: '@fontsource/roboto',
  Poppins: '@fontsource/poppins',
  Montserrat: '@fontsource/montserrat',
  Outfit: '@fontsource/outfit',
};

/** `inter-latin-600-normal.woff2`: the file name inside the package's `files/` folder. */
export function fontFileName(font: WidgetFont, weight: (typeof FONT_WEIGHTS)[number]): string {
  return `${font.toLowerCase()}-latin-${weight}-normal.woff2`;
}

/** Every file the font route may serve, by name: nothing else is ever read from disk. */
export const FONT_FILES: ReadonlyMap<string, { font: WidgetFont; weight: number }> = new Map(
  (Object.keys(FONT_PACKAGES) as WidgetFont[]).flatMap((font) =>
    FONT_WEIGHTS.map((weight) => [fontFileName(font, weight), { font, weight }] as const),
  ),
);

/** `@font-face` rules for one font, with URLs relative to the widget page. */
export function fontFaceCss(font: WidgetFont, apiBase: string): string {
  return FONT_WEIGHTS.map(
    (weight) =>
      `@font-face{font-family:"${font}";font-style:normal;font-weight:${weight};font-display:swap;` +
      `src:url("${apiBase}/widget/fonts/${fontFileName(font, weight)}") format("woff2")}`,
  ).join('\n');
}
