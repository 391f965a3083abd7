/**
 * The widget page's Content-Security-Policy: everything from the page's own origin only, the
 * one inline script by nonce, and any site may frame it.
 *
 * `style-src 'unsafe-inline'` because the MOTD's colours are `style` attributes (a nonce does
 * not cover attributes); every value in them is a validated colour, so no CSS can be injected.
 */
export function widgetContentSecurityPolicy(nonce: string): string {
  return [
    "default-src 'none'",
    "style-src 'unsafe-inline'",
    "font-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    `script-src 'nonce-${nonce}'`,
    "base-uri 'none'",
    "form-action 'none'",
    'frame-ancestors *',
  ].join('; ');
}
