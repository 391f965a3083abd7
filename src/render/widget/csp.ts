/**
 * The widget page's Content-Security-Policy: everything from the page's own origin only, the
 * one inline script by the SHA-256 hash of its fixed text, and any site may frame it.
 *
 * A hash, not a per-response nonce: the page is publicly cached (CDNs and browsers serve one
 * copy to many visitors), and a nonce repeated to everyone is no nonce. The script is the same
 * text on every page (WIDGET_SCRIPT; its data comes from `data-` attributes), so one hash
 * allows exactly it and nothing an injection could add.
 *
 * `style-src 'unsafe-inline'` because the MOTD's colours are `style` attributes (a hash does
 * not cover attributes); every value in them is a validated colour, so no CSS can be injected.
 */
import { createHash } from 'node:crypto';
import { WIDGET_SCRIPT } from './client.js';

/** CSP source of the inline script: `'sha256-<base64>'` of its exact text. */
export const WIDGET_SCRIPT_HASH = `'sha256-${createHash('sha256').update(WIDGET_SCRIPT, 'utf8').digest('base64')}'`;

const POLICY = [
  "default-src 'none'",
  "style-src 'unsafe-inline'",
  "font-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  `script-src ${WIDGET_SCRIPT_HASH}`,
  "base-uri 'none'",
  "form-action 'none'",
  'frame-ancestors *',
].join('; ');

export function widgetContentSecurityPolicy(): string {
  return POLICY;
}
