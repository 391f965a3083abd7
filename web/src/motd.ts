/**
 * The MOTD as DOM nodes, never as assigned markup. The segments come from the service's own
 * reading of `motd.html` (exact colours, falling back to `raw` when the two disagree: the
 * same code the banners use); each becomes a text node, or a span whose colour and styles
 * are set through the CSSOM, which the page's `style-src 'self'` does not restrict (unlike
 * style attributes).
 */
import { colorToHex, hexToRgb, type MotdSegment, type Rgb } from '../../src/motd/index.js';
import { segmentsOfMotd } from '../../src/render/motd-text.js';
import { h } from './dom.js';
import type { Motd } from './api.js';

/** The lighter of the two schemes' MOTD panels (style.css `--motd-bg`); the other is darker. */
const PANEL: Rgb = { r: 0x1f, g: 0x20, b: 0x23 };
/** WCAG 2 AA for text: 4.5:1. */
const MIN_CONTRAST = 4.5;

/** WCAG 2 relative luminance. */
function luminance({ r, g, b }: Rgb): number {
  const channel = (v: number) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
}

function contrast(a: Rgb, b: Rgb): number {
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (light + 0.05) / (dark + 0.05);
}

/**
 * A MOTD colour as the page shows it: the server's own where it is readable on the panel, else
 * mixed with white just enough to reach 4.5:1 (Minecraft's dark blue, black and dark grey would
 * vanish on a dark panel). The banners keep the server's exact colours.
 */
export function readableColor(hex: string): string {
  const rgb = hexToRgb(hex);
  for (let white = 0; white < 1; white += 0.05) {
    const mixed = { r: rgb.r + (255 - rgb.r) * white, g: rgb.g + (255 - rgb.g) * white, b: rgb.b + (255 - rgb.b) * white };
    if (contrast(mixed, PANEL) >= MIN_CONTRAST) {
      return `#${[mixed.r, mixed.g, mixed.b].map((v) => Math.round(v).toString(16).padStart(2, '0')).join('')}`;
    }
  }
  return '#ffffff';
}

function node(segment: MotdSegment): Node {
  const plain = segment.color === null && !segment.bold && !segment.italic && !segment.underlined && !segment.strikethrough && !segment.obfuscated;
  if (plain) return document.createTextNode(segment.text);
  const span = h('span', { class: segment.obfuscated ? 'mc-obfuscated' : null }, segment.text);
  if (segment.color !== null) span.style.setProperty('color', readableColor(colorToHex(segment.color)));
  if (segment.bold) span.style.setProperty('font-weight', 'bold');
  if (segment.italic) span.style.setProperty('font-style', 'italic');
  const decorations = [segment.underlined ? 'underline' : '', segment.strikethrough ? 'line-through' : ''].filter(Boolean);
  if (decorations.length > 0) span.style.setProperty('text-decoration', decorations.join(' '));
  return span;
}

export function motdNodes(motd: Motd): Node[] {
  return segmentsOfMotd({ ...motd, raw_lines: [], clean_lines: [] }).map(node);
}
