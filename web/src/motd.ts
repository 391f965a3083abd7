/**
 * The MOTD as DOM nodes, never as assigned markup. The segments come from the service's own
 * reading of `motd.html` (exact colours, falling back to `raw` when the two disagree: the
 * same code the banners use); each becomes a text node, or a span whose colour and styles
 * are set through the CSSOM, which the page's `style-src 'self'` does not restrict (unlike
 * style attributes).
 */
import { colorToHex, type MotdSegment } from '../../src/motd/index.js';
import { segmentsOfMotd } from '../../src/render/motd-text.js';
import { h } from './dom.js';
import type { Motd } from './api.js';

function node(segment: MotdSegment): Node {
  const plain = segment.color === null && !segment.bold && !segment.italic && !segment.underlined && !segment.strikethrough && !segment.obfuscated;
  if (plain) return document.createTextNode(segment.text);
  const span = h('span', { class: segment.obfuscated ? 'mc-obfuscated' : null }, segment.text);
  if (segment.color !== null) span.style.setProperty('color', colorToHex(segment.color));
  if (segment.bold) span.style.setProperty('font-weight', 'bold');
  if (segment.italic) span.style.setProperty('font-style', 'italic');
  const decorations = [segment.underlined ? 'underline' : '', segment.strikethrough ? 'line-through' : ''].filter(Boolean);
  if (decorations.length > 0) span.style.setProperty('text-decoration', decorations.join(' '));
  return span;
}

export function motdNodes(motd: Motd): Node[] {
  return segmentsOfMotd({ ...motd, raw_lines: [], clean_lines: [] }).map(node);
}
