/**
 * The MOTD from the service's own `motd.html` (escaped text and flat spans carrying colour
 * and style declarations, see src/motd/format.ts) turned into DOM nodes without ever
 * assigning markup. The string is read by a strict tokenizer of exactly that format: text
 * becomes text nodes, the allowed declarations are set through the CSSOM (which the page's
 * `style-src 'self'` does not restrict, unlike style attributes). Anything else in it, and
 * the whole MOTD falls back to its plain `clean` text.
 */
import { h } from './dom.js';

const ALLOWED: Record<string, RegExp> = {
  color: /^#[0-9a-f]{6}$/i,
  'font-weight': /^bold$/,
  'font-style': /^italic$/,
  'text-decoration': /^(underline|line-through)( (underline|line-through))?$/,
};

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'", '&#x27;': "'" };
const TOKEN = /<span(?: class="mc-obfuscated")?(?: style="([^"<>]*)")?>((?:[^<>&]|&(?:amp|lt|gt|quot|#39|#x27);)*)<\/span>|((?:[^<>&]|&(?:amp|lt|gt|quot|#39|#x27);)+)/gy;

const unescape = (text: string) => text.replace(/&(?:amp|lt|gt|quot|#39|#x27);/g, (e) => ENTITIES[e] ?? e);

function declarations(style: string): Array<[string, string]> | null {
  const out: Array<[string, string]> = [];
  for (const part of style.split(';')) {
    if (part.trim() === '') continue;
    const colon = part.indexOf(':');
    if (colon < 0) return null;
    const name = part.slice(0, colon).trim().toLowerCase();
    const value = part.slice(colon + 1).trim();
    if (!ALLOWED[name]?.test(value)) return null;
    out.push([name, value]);
  }
  return out;
}

export function motdNodes(html: string, fallback: string): Node[] {
  const nodes: Node[] = [];
  TOKEN.lastIndex = 0;
  let at = 0;
  while (at < html.length) {
    const match = TOKEN.exec(html);
    if (!match || match.index !== at) return [document.createTextNode(fallback)];
    at = TOKEN.lastIndex;
    const [whole, style, spanText, plain] = match;
    if (plain !== undefined) {
      nodes.push(document.createTextNode(unescape(plain)));
      continue;
    }
    const span = h('span', {}, unescape(spanText ?? ''));
    if (whole.startsWith('<span class="mc-obfuscated"')) span.className = 'mc-obfuscated';
    const styles = declarations(style ?? '');
    if (styles === null) return [document.createTextNode(fallback)];
    for (const [name, value] of styles) span.style.setProperty(name, value);
    nodes.push(span);
  }
  return nodes;
}

