/**
 * MOTD text → the styled lines the renderer draws, on top of the MOTD module (src/motd).
 *
 * A status carries its formatted MOTD as `segments` (exact colours, hex included), the same
 * runs its JSON `html` and the widget's script are built from. A status cached by an older
 * version without them is drawn from `raw`.
 */
import type { Motd } from '../core/types.js';
import { ampersandToSection, parseFormattedText, splitSegmentsIntoLines, type MotdSegment } from '../motd/index.js';

/** Lines and characters of MOTD a banner ever looks at: server text is capped before drawing. */
export const MAX_MOTD_LINES = 4;
export const MAX_MOTD_LINE_LENGTH = 160;

/** Segments of a status MOTD: its formatted `segments`, or `raw` for a status without them. */
export function segmentsOfMotd(motd: Motd): MotdSegment[] {
  return motd.segments ?? parseFormattedText(motd.raw);
}

/**
 * `&` codes and the `&#rrggbb` / `§#rrggbb` hex shorthand of chat plugins → `§` codes, as
 * `/banner/motd` accepts them. `&&` stays as it is.
 */
export function userMotdToSection(text: string): string {
  const hex = text.replace(/[&§]#([0-9a-f]{6})/gi, (_m, digits: string) =>
    `§x${[...digits.toLowerCase()].map((d) => `§${d}`).join('')}`,
  );
  return ampersandToSection(hex);
}

/** Lines to draw: at most `maxLines` of at most MAX_MOTD_LINE_LENGTH characters each. */
export function motdLines(segments: readonly MotdSegment[], maxLines = MAX_MOTD_LINES): MotdSegment[][] {
  const lines = splitSegmentsIntoLines(segments).slice(0, maxLines);
  return lines.map((line) => {
    let left = MAX_MOTD_LINE_LENGTH;
    const out: MotdSegment[] = [];
    for (const segment of line) {
      if (left <= 0) break;
      const chars = [...segment.text];
      const text = chars.slice(0, left).join('');
      left -= Math.min(chars.length, left);
      out.push({ ...segment, text });
    }
    return out;
  });
}
