/**
 * Text widths for badges, measured with the bundled Noto Sans (fonts.ts) through
 * @napi-rs/canvas. Canvas and the fonts are loaded on the first badge, not when the service
 * starts: an instance that never draws a badge never loads them for it.
 */
import type { BadgeFont, TextMeasure } from './badge.js';

let measurer: Promise<TextMeasure> | undefined;

async function loadMeasurer(): Promise<TextMeasure> {
  const [{ createCanvas }, fonts] = await Promise.all([import('@napi-rs/canvas'), import('./fonts.js')]);
  fonts.registerRenderFonts();
  const context = createCanvas(1, 1).getContext('2d');
  return (text: string, font: BadgeFont) => {
    context.font = `${font.weight} ${font.size}px "${fonts.SANS_FAMILY}"`;
    return context.measureText(text).width;
  };
}

/** The badge text measure, loaded once; a failed load is tried again by the next caller. */
export function badgeTextMeasure(): Promise<TextMeasure> {
  measurer ??= loadMeasurer().catch((error: unknown) => {
    measurer = undefined;
    throw error;
  });
  return measurer;
}
