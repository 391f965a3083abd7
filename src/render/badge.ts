/**
 * Status badges: a small two-part SVG (`minecraft | 12/100 online`) in the styles READMEs use,
 * and the same content as shields.io's endpoint JSON. Pure functions of their inputs; text
 * widths come from a `TextMeasure` (badge-text.ts measures them with the bundled Noto Sans).
 *
 * A browser draws the SVG with whatever font of the declared family it has. Every text also
 * carries `textLength`, the width measured here: a substitute font wider or narrower than the
 * one measured is fitted to that width, so text never runs out of its part of the badge.
 */
import { createHash } from 'node:crypto';
import type { ServerStatus } from '../core/types.js';
import type { BadgeStyle } from './badge-options.js';
import { luminance } from './color.js';

/** The family the SVG declares: the font measured first, then common fonts of similar shape. */
export const BADGE_FONT_FAMILY = "'Noto Sans', 'DejaVu Sans', Verdana, Geneva, 'Helvetica Neue', Arial, sans-serif";

export interface BadgeFont {
  size: number;
  weight: 400 | 700;
}

/** Advance width in pixels of `text` drawn in the badge font at `font`. */
export type TextMeasure = (text: string, font: BadgeFont) => number;

export interface BadgeOptions {
  /** Left text; empty for a badge with the message alone. */
  label: string;
  style: BadgeStyle;
  /** `#rrggbb` colours. */
  labelColor: string;
  onlineColor: string;
  offlineColor: string;
}

/** What a badge says, independent of how it is drawn. */
export interface BadgeContent {
  label: string;
  message: string;
  /** `#rrggbb` colours of the two parts. */
  labelColor: string;
  messageColor: string;
  online: boolean;
}

/** `12/100 online` (or `online` when the server reports no players), or `offline`. */
export function badgeContent(status: ServerStatus, options: BadgeOptions): BadgeContent {
  const message = !status.online ? 'offline' : status.players ? `${status.players.online}/${status.players.max} online` : 'online';
  return {
    label: options.label,
    message,
    labelColor: options.labelColor,
    messageColor: status.online ? options.onlineColor : options.offlineColor,
    online: status.online,
  };
}

/** The sentence the badge shows, for `<title>`, `aria-label` and alt texts. */
export function badgeTitle(content: BadgeContent): string {
  return content.label === '' ? content.message : `${content.label}: ${content.message}`;
}

interface StyleMetrics {
  height: number;
  fontSize: number;
  /** Baseline of the text, from the top. */
  baseline: number;
  /** Space left and right of each text. */
  padding: number;
  /** Extra space between two characters (spread by `textLength`). */
  letterSpacing: number;
  radius: number;
  /** Light gloss and a text shadow under light text. */
  gloss: boolean;
  uppercase: boolean;
  messageWeight: 400 | 700;
}

const STYLE_METRICS: Record<BadgeStyle, StyleMetrics> = {
  flat: { height: 20, fontSize: 11, baseline: 14, padding: 6, letterSpacing: 0, radius: 3, gloss: true, uppercase: false, messageWeight: 400 },
  'flat-square': { height: 20, fontSize: 11, baseline: 14, padding: 6, letterSpacing: 0, radius: 0, gloss: false, uppercase: false, messageWeight: 400 },
  'for-the-badge': { height: 28, fontSize: 10, baseline: 18, padding: 10, letterSpacing: 1.2, radius: 0, gloss: false, uppercase: true, messageWeight: 700 },
};

/** Dark text for light backgrounds: whichever of the two has the higher contrast. */
const DARK_TEXT = '#1f2328';
const LIGHT_TEXT = '#ffffff';

function textColorOn(background: string): string {
  const bg = luminance(background);
  const contrast = (fg: string) => {
    const l = luminance(fg);
    return (Math.max(l, bg) + 0.05) / (Math.min(l, bg) + 0.05);
  };
  return contrast(LIGHT_TEXT) >= contrast(DARK_TEXT) ? LIGHT_TEXT : DARK_TEXT;
}

/** Characters XML 1.0 cannot hold: C0 controls but tab and newlines, U+FFFE, U+FFFF, lone surrogates. */
const NOT_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Escapes text for XML content and attributes; characters XML cannot hold become U+FFFD. */
export function escapeXml(text: string): string {
  return text
    .replace(NOT_XML, '\ufffd')
    .replace(/[&<>"']/g, (c) => `&${{ '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot', "'": 'apos' }[c]};`);
}

/** Pixel values written with at most two decimals. */
const px = (n: number) => String(Math.round(n * 100) / 100);

interface Part {
  x: number;
  width: number;
  text: string;
  textWidth: number;
  fill: string;
  weight: 400 | 700;
}

function layoutPart(text: string, x: number, fill: string, weight: 400 | 700, m: StyleMetrics, measure: TextMeasure): Part {
  const shown = m.uppercase ? text.toUpperCase() : text;
  const gaps = Math.max(0, [...shown].length - 1);
  const textWidth = measure(shown, { size: m.fontSize, weight }) + gaps * m.letterSpacing;
  return { x, width: Math.ceil(textWidth) + 2 * m.padding, text: shown, textWidth, fill, weight };
}

function partText(part: Part, m: StyleMetrics): string {
  const x = px(part.x + m.padding);
  const length = `textLength="${px(part.textWidth)}" lengthAdjust="${m.letterSpacing > 0 ? 'spacing' : 'spacingAndGlyphs'}"`;
  const color = textColorOn(part.fill);
  const weight = part.weight === 700 ? ' font-weight="bold"' : '';
  const text = escapeXml(part.text);
  // The shadow that gives light text its depth on the glossy style; decoration only.
  const shadow =
    m.gloss && color === LIGHT_TEXT
      ? `<text aria-hidden="true" x="${x}" y="${m.baseline + 1}" fill="#010101" fill-opacity=".3"${weight} ${length}>${text}</text>`
      : '';
  return `${shadow}<text x="${x}" y="${m.baseline}" fill="${color}"${weight} ${length}>${text}</text>`;
}

/**
 * The badge as an SVG document. Its ids carry a digest of the content, so several badges
 * inlined in one HTML page do not share a gradient or clip path.
 */
export function renderBadgeSvg(content: BadgeContent, style: BadgeStyle, measure: TextMeasure): string {
  const m = STYLE_METRICS[style];
  const parts: Part[] = [];
  if (content.label !== '') parts.push(layoutPart(content.label, 0, content.labelColor, 400, m, measure));
  const messageX = parts[0]?.width ?? 0;
  parts.push(layoutPart(content.message, messageX, content.messageColor, m.messageWeight, m, measure));
  const width = parts.reduce((sum, p) => sum + p.width, 0);
  const title = escapeXml(badgeTitle(content));
  const id = `b${createHash('sha1').update(JSON.stringify([content, style])).digest('hex').slice(0, 8)}`;
  const rects = parts.map((p) => `<rect x="${p.x}" width="${p.width}" height="${m.height}" fill="${p.fill}"/>`).join('');
  const gloss = m.gloss
    ? `<linearGradient id="${id}-g" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>`
    : '';
  const clip = m.radius > 0 ? `<clipPath id="${id}-r"><rect width="${width}" height="${m.height}" rx="${m.radius}" fill="#fff"/></clipPath>` : '';
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${m.height}" viewBox="0 0 ${width} ${m.height}" role="img" aria-label="${title}">` +
    `<title>${title}</title>${gloss}${clip}` +
    `<g${clip ? ` clip-path="url(#${id}-r)"` : ''}>${rects}${gloss ? `<rect width="${width}" height="${m.height}" fill="url(#${id}-g)"/>` : ''}</g>` +
    `<g font-family="${escapeXml(BADGE_FONT_FAMILY)}" font-size="${m.fontSize}" text-rendering="geometricPrecision">` +
    parts.map((p) => partText(p, m)).join('') +
    '</g></svg>'
  );
}

/** shields.io only refreshes an endpoint badge every 300 seconds at the most. */
export const SHIELDS_MIN_CACHE_SECONDS = 300;

/** shields.io's endpoint JSON (schema version 1; https://shields.io/badges/endpoint-badge). */
export interface ShieldsEndpoint {
  schemaVersion: 1;
  label: string;
  message: string;
  color: string;
  labelColor: string;
  isError: boolean;
  style: BadgeStyle;
  cacheSeconds: number;
}

/**
 * The endpoint JSON of a badge, to be kept as long as a status stays fresh (within shields.io's
 * minimum). An offline server is marked `isError`, so a colour given in
 * the shields.io URL cannot paint it like an online one.
 */
export function shieldsEndpoint(content: BadgeContent, style: BadgeStyle, statusTtlSeconds: number): ShieldsEndpoint {
  return {
    schemaVersion: 1,
    label: content.label,
    message: content.message,
    color: content.messageColor,
    labelColor: content.labelColor,
    isError: !content.online,
    style,
    cacheSeconds: Math.max(SHIELDS_MIN_CACHE_SECONDS, Math.ceil(statusTtlSeconds)),
  };
}
