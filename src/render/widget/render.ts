/**
 * renderWidget: status + options → one self-contained HTML page (inline CSS, one fixed inline
 * script allowed by its CSP hash (csp.ts), fonts and status from the page's own origin).
 *
 * Escaping: every value from a server or a request is escaped here, except `motd.html`, which
 * the MOTD module builds from escaped text and validated colours.
 */
import { unknownHostStatus, type QueryMode, type ServerStatus } from '../../core/types.js';
import { parseAddress, queryEcho } from '../../resolve/index.js';
import { escapeHtml } from '../../motd/index.js';
import { WIDGET_SCRIPT } from './client.js';
import { DEMO_ADDRESS, demoStatus } from './demo.js';
import type { WidgetOptions } from './options.js';
import { iconPixels, widgetCss } from './styles.js';
import { FALLBACK_ICON, STATE_LABELS, STATE_TITLES, formatCount, latencyQuality, widgetView, type WidgetView } from './view.js';

export type WidgetSource =
  /** Sample data; the page never refreshes itself. */
  | { kind: 'demo' }
  /** A looked-up status; `address` is the path parameter, which the page refreshes with. */
  | { kind: 'server'; address: string; mode: QueryMode; status: ServerStatus }
  /** The host name has no DNS records: drawn as offline, and refreshed in case that changes. */
  | { kind: 'not_found'; address: string; mode: QueryMode };

export interface RenderContext {
  /**
   * The API root (the folder holding `status/` and `widget/`) as the page's browser should
   * reach it, typically relative to the page (`../..`) so that it survives a reverse proxy
   * that mounts the service under a path of its own.
   */
  basePath: string;
}


const BASE_PATH = /^(?:\.{1,2}|\/?[A-Za-z0-9._~-]*)(?:\/[A-Za-z0-9._~-]+)*$/;

export function renderWidget(source: WidgetSource, options: WidgetOptions, context: RenderContext): string {
  if (!BASE_PATH.test(context.basePath)) throw new TypeError('renderWidget: basePath must be a plain path');
  const { view, address, mode } = sourceView(source);
  const classes = [
    'w',
    `w--${options.size}`,
    `w--${options.theme}`,
    `w--ind-${options.statusIndicator}`,
    `w--bar-${options.playerBarStyle}`,
    `w--align-${options.textAlign}`,
    options.showBorder ? 'w--border' : '',
    options.glowEffect ? 'w--glow' : '',
    options.boxShadow ? 'w--shadow' : '',
    options.hoverEffect ? 'w--hover' : '',
  ].filter((c) => c !== '');
  const data: Array<[string, string]> = [
    ['data-state', view.state],
    ['data-api', context.basePath],
    ['data-motd', view.motdKey],
  ];
  if (address !== null) {
    data.push(['data-address', address], ['data-mode', mode], ['data-refresh-ms', String(options.refreshSeconds * 1000)]);
  }
  const attributes = data.map(([name, value]) => ` ${name}="${escapeHtml(value)}"`).join('');
  const body =
    options.size === 'small'
      ? [head(view, options), options.showPlayers ? bar(view) : '']
      : [head(view, options), options.showMotd ? motd(view) : '', options.showPlayers ? players(view, options) : ''];
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex">
<link rel="icon" href="data:,">
<title>${escapeHtml(view.title)} · Minecraft server status</title>
<style>
${widgetCss(options, context.basePath)}
</style>
</head>
<body>
<main id="w" class="${classes.join(' ')}"${attributes} aria-label="Minecraft server status: ${escapeHtml(view.title)}">
${body.filter((part) => part !== '').join('\n')}
</main>
<script>${WIDGET_SCRIPT}</script>
</body>
</html>
`;
}

function sourceView(source: WidgetSource): { view: WidgetView; address: string | null; mode: QueryMode } {
  switch (source.kind) {
    case 'demo':
      return { view: widgetView(demoStatus(), 'play.example.com'), address: null, mode: 'java' };
    case 'server':
      return { view: widgetView(source.status, source.address), address: source.address, mode: source.mode };
    case 'not_found':
      return {
        view: widgetView(unknownHostStatus(queryEcho(parseAddress(source.address), source.mode)), source.address),
        address: source.address,
        mode: source.mode,
      };
  }
}

const hidden = (visible: boolean) => (visible ? '' : ' hidden');

function head(view: WidgetView, options: WidgetOptions): string {
  const small = options.size === 'small';
  const meta: string[] = [];
  // The small widget's one meta line puts the short, live figures first.
  if (small && options.showPlayers) meta.push(playerCount(view, true));
  if (small && options.showLatency) meta.push(latency(view));
  if (options.showVersion) meta.push(`<span class="w__version"${hidden(view.version !== null)}>${escapeHtml(view.version ?? '')}</span>`);
  if (options.showProtocol) {
    meta.push(`<span class="w__protocol"${hidden(view.protocol !== null)}>${view.protocol === null ? '' : `Protocol ${view.protocol}`}</span>`);
  }
  if (!small && options.showLatency) meta.push(latency(view));
  meta.push(`<span class="w__error"${hidden(view.error !== null)}>${escapeHtml(view.error ?? '')}</span>`);
  return `<div class="w__head">
${options.showFavicon ? icon(view, options) : ''}<div class="w__body">
<div class="w__name" title="${escapeHtml(view.title)}">${escapeHtml(view.title)}</div>
<div class="w__meta">${meta.join('')}</div>
</div>
${status(view, options)}</div>`;
}

function icon(view: WidgetView, options: WidgetOptions): string {
  const size = iconPixels(options);
  const pixel = view.faviconWidth !== null && view.faviconWidth < size ? ' w__icon--pixel' : '';
  return `<img class="w__icon${pixel}" src="${escapeHtml(view.favicon ?? FALLBACK_ICON)}" alt="" width="${size}" height="${size}">\n`;
}

function status(view: WidgetView, options: WidgetOptions): string {
  if (options.statusIndicator === 'none') return '';
  // A stand-in status (unknown host) has no check time.
  const title = view.checkedAt === '' ? STATE_LABELS[view.state] : `${STATE_TITLES[view.state]} ${view.checkedAt}`;
  return `<div class="w__status" title="${escapeHtml(title)}"><span class="w__dot" aria-hidden="true"></span><span class="w__label">${STATE_LABELS[view.state]}</span></div>\n`;
}

function latency(view: WidgetView): string {
  const ms = view.latencyMs;
  return (
    `<span class="w__latency"${ms === null ? ' hidden' : ` data-quality="${latencyQuality(ms)}"`}>` +
    '<span class="w__signal" aria-hidden="true"><i></i><i></i><i></i></span>' +
    `<span class="w__ms">${ms === null ? '' : `${ms} ms`}</span></span>`
  );
}

/** A person, drawn before the small widget's player count. */
const PLAYERS_ICON =
  '<svg class="w__picon" viewBox="0 0 16 16" aria-hidden="true"><circle cx="8" cy="4.5" r="3"/><path d="M2 15c0-3.6 2.7-5.5 6-5.5s6 1.9 6 5.5z"/></svg>';

/** "128 / 500"; in the small widget's meta line it has an icon and is left out offline. */
function playerCount(view: WidgetView, small = false): string {
  const p = view.players;
  return (
    `<span class="w__count"${hidden(!small || p !== null)}${small ? ' title="Players online"' : ''}>${small ? PLAYERS_ICON : ''}` +
    `<span class="w__online">${p ? formatCount(p.online) : '\u2014'}</span>` +
    `<span class="w__of"${hidden(p !== null)}> / <span class="w__max">${p ? formatCount(p.max) : ''}</span></span></span>`
  );
}

function bar(view: WidgetView): string {
  const percent = view.players?.percent ?? 0;
  return `<div class="w__bar"><div class="w__fill" style="width:${percent}%"></div></div>`;
}

function motd(view: WidgetView): string {
  if (view.state === 'offline') {
    return '<div class="w__motd w__motd--offline"><div class="w__motd-text">Server offline</div></div>';
  }
  return `<div class="w__motd"${hidden(view.motdHtml !== null)}><div class="w__motd-text">${view.motdHtml ?? ''}</div></div>`;
}

function players(view: WidgetView, options: WidgetOptions): string {
  const parts = [
    `<div class="w__prow"><span class="w__plabel">Players</span>${playerCount(view)}</div>`,
    bar(view),
  ];
  if (options.size === 'large') {
    const items = view.sample.map((name) => `<li>${escapeHtml(name)}</li>`);
    if (view.sampleMore > 0) items.push(`<li class="w__more">+${formatCount(view.sampleMore)} more</li>`);
    parts.push(`<ul class="w__sample"${hidden(view.sample.length > 0)}>${items.join('')}</ul>`);
  }
  return `<div class="w__players">\n${parts.join('\n')}\n</div>`;
}

export { DEMO_ADDRESS };
