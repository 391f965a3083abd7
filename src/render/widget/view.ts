/**
 * What the widget shows for a status, as plain values: the one place that decides labels,
 * number formats and which fields are shown. `client.ts` repeats these rules in the browser.
 */
import { acceptFavicon } from '../../protocol/favicon.js';
import type { ServerStatus } from '../../core/types.js';
import { cleanServerText } from '../../motd/index.js';

export type WidgetState = 'online' | 'offline' | 'stale';

export const STATE_LABELS: Readonly<Record<WidgetState, string>> = {
  online: 'Online',
  offline: 'Offline',
  stale: 'Cached',
};

/** Tooltip of the status indicator; the browser appends the check time. */
export const STATE_TITLES: Readonly<Record<WidgetState, string>> = {
  online: 'Online, checked at',
  offline: 'Offline, checked at',
  stale: 'Could not refresh just now; last successful check at',
};

/** The icon shown when a server has no favicon: original artwork (a cube outline), SVG. */
export const FALLBACK_ICON =
  'data:image/svg+xml,' +
  encodeURIComponent(
    '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64">' +
      '<defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1">' +
      '<stop offset="0" stop-color="#475569"/><stop offset="1" stop-color="#1e293b"/></linearGradient></defs>' +
      '<rect width="64" height="64" rx="12" fill="url(#g)"/>' +
      '<g fill="none" stroke="#cbd5e1" stroke-width="3" stroke-linejoin="round" stroke-linecap="round">' +
      '<path d="M32 14 48 23v18l-16 9-16-9V23z"/><path d="M16 23l16 9 16-9M32 32v18"/></g></svg>',
  );


/** Names of the player sample shown by the large widget. */
export const SAMPLE_MAX = 6;

export interface WidgetView {
  state: WidgetState;
  /** Server address as displayed (the one the widget was asked for). */
  title: string;
  version: string | null;
  protocol: number | null;
  latencyMs: number | null;
  players: { online: number; max: number; percent: number } | null;
  /** Escaped HTML from the MOTD module, or null when offline or empty. */
  motdHtml: string | null;
  /** `motd.raw`, which the browser compares to notice a changed MOTD. */
  /** What the page's script compares a refreshed MOTD with: its `html` (never parsed). */
  motdKey: string;
  /** A validated `data:image/png;base64,` URL or null. */
  favicon: string | null;
  /** Width in pixels read from the favicon's PNG header, when it has one. */
  faviconWidth: number | null;
  sample: string[];
  /** Players beyond the sample names shown. */
  sampleMore: number;
  /** Short failure summary when offline. */
  error: string | null;
  checkedAt: string;
}

export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

export function latencyQuality(ms: number): 'good' | 'fair' | 'poor' {
  return ms <= 80 ? 'good' : ms <= 200 ? 'fair' : 'poor';
}

function isCount(n: unknown): n is number {
  return typeof n === 'number' && Number.isFinite(n) && n >= 0;
}

/** Width of a PNG from its IHDR chunk (bytes 16-19), or null when it is not a PNG. */
export function pngWidth(dataUrl: string): number | null {
  const head = Buffer.from(dataUrl.slice(dataUrl.indexOf(',') + 1, dataUrl.indexOf(',') + 1 + 32), 'base64');
  if (head.length < 24 || head.readUInt32BE(0) !== 0x89504e47 || head.toString('latin1', 12, 16) !== 'IHDR') return null;
  return head.readUInt32BE(16);
}

/** The favicon the widget inlines: the protocol's one favicon check (form, base64, PNG, cap). */
export function validFavicon(value: unknown): string | null {
  return acceptFavicon(value);
}

export function widgetView(status: ServerStatus, title: string): WidgetView {
  const state: WidgetState = status.online ? (status.stale ? 'stale' : 'online') : 'offline';
  const live = state !== 'offline';
  const p = status.players;
  const players =
    live && p && isCount(p.online) && isCount(p.max)
      ? {
          online: p.online,
          max: p.max,
          percent: Math.round((p.max > 0 ? Math.min(100, (p.online / p.max) * 100) : 0) * 10) / 10,
        }
      : null;
  // A server with players but a tiny share of its slots still gets a visible sliver.
  if (players && players.online > 0) players.percent = Math.max(players.percent, 1.5);
  const sample = players
    ? (p?.sample ?? [])
        .map((entry) => cleanServerText((entry as { name?: unknown }).name, 32))
        .filter((name) => name !== '')
        .slice(0, SAMPLE_MAX)
    : [];
  const version = live && status.version ? cleanServerText(status.version.name, 64) : '';
  const protocol = live && status.version && Number.isInteger(status.version.protocol) && status.version.protocol >= 0 ? status.version.protocol : null;
  const favicon = validFavicon(status.favicon);
  const motdHtml = live && status.motd && status.motd.clean.trim() !== '' ? status.motd.html : null;
  return {
    state,
    title,
    version: version === '' ? null : version,
    protocol,
    latencyMs: live && isCount(status.roundTripLatency) ? Math.round(status.roundTripLatency) : null,
    players,
    motdHtml,
    motdKey: live && status.motd ? status.motd.html : '',
    favicon,
    faviconWidth: favicon ? pngWidth(favicon) : null,
    sample,
    sampleMore: players && sample.length > 0 ? Math.max(0, players.online - sample.length) : 0,
    error: live ? null : cleanServerText(status.error ?? '', 80) || 'Server offline',
    checkedAt: status.checked_at,
  };
}
