/**
 * The pure parts of the widget: option parsing, the view of a status, the HTML and its escaping.
 * What the page looks like and does in a browser is in browser.test.ts.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { offlineStatus, type ServerStatus } from '../../src/core/types.js';
import { formatMotd } from '../../src/motd/index.js';
import {
  DEFAULT_HEIGHTS,
  WidgetOptionError,
  defaultWidgetOptions,
  parseCssPixels,
  parseHexColor,
  renderWidget,
  resolveWidgetOptions,
  widgetContentSecurityPolicy,
  type WidgetOptions,
  type WidgetQuery,
} from '../../src/render/widget/index.js';
import { FALLBACK_ICON, widgetView } from '../../src/render/widget/view.js';
import { sampleStatus } from '../render/support.js';

const context = { basePath: '../..' };
const HOSTILE = '<img src=x onerror=alert(1)><script>alert(2)</script>"\'&';

function status(overrides: Partial<ServerStatus> = {}): ServerStatus {
  return sampleStatus({
    server_id: null,
    icmp: null,
    players: { online: 12, max: 100, sample: [{ name: 'Ada', id: '0' }] },
    motd: formatMotd('§aHello §lworld'),
    ...overrides,
  });
}

const options = (size: WidgetOptions['size'] = 'normal', query: WidgetQuery = {}) => resolveWidgetOptions(size, query);
const render = (s: ServerStatus, o = options(), address = 'play.example.net') =>
  renderWidget({ kind: 'server', address, mode: 'java', status: s }, o, context);

/** The page without its stylesheet and script: the markup server data ends up in. */
const markup = (html: string) => html.replace(/<style>[\s\S]*?<\/style>/, '').replace(/<script[\s\S]*?<\/script>/, '');

describe('parseHexColor', () => {
  it.each([
    ['#10b981', '#10b981'],
    ['10B981', '#10b981'],
    ['#FFF', '#ffffff'],
    ['abc', '#aabbcc'],
  ])('%s → %s', (input, expected) => expect(parseHexColor(input)).toBe(expected));

  it.each(['', '#', 'red', '#ff', '#ffff', '#fffffff', '#ggg', ' #fff', 'fff;', 'rgb(1,2,3)', '##fff'])('refuses %j', (input) =>
    expect(parseHexColor(input)).toBeNull(),
  );
});

describe('parseCssPixels', () => {
  it.each([
    ['120', 120],
    ['120px', 120],
    ['50PX', 50],
  ])('%s → %d', (input, expected) => expect(parseCssPixels(input)).toBe(expected));
  it.each(['', 'px', '12.5', '-120', '+120', '120em', '1e2', '12 0'])('refuses %j', (input) => expect(parseCssPixels(input)).toBeNull());
});

describe('resolveWidgetOptions', () => {
  it('has the defaults of the spec', () => {
    expect(options('normal')).toEqual(defaultWidgetOptions('normal'));
    expect(options('normal')).toMatchObject({
      theme: 'dark',
      showPlayers: true,
      showVersion: true,
      showMotd: true,
      showLatency: true,
      showFavicon: true,
      showProtocol: false,
      showBorder: false,
      onlineColor: '#10b981',
      offlineColor: '#ef4444',
      gradientBg: false,
      statusIndicator: 'dot',
      iconSize: 'medium',
      font: null,
      textAlign: 'left',
      customHeight: null,
      borderRadius: 0.75,
      borderWidth: 1,
      hoverEffect: false,
      glowEffect: false,
      boxShadow: false,
      playerBarStyle: 'default',
      refreshSeconds: 60,
    });
  });

  it('normalises colours, fonts and heights', () => {
    expect(options('small', { bgColor: 'ABC', font: 'montserrat', customHeight: '120px' })).toMatchObject({
      bgColor: '#aabbcc',
      font: 'Montserrat',
      customHeight: 120,
    });
  });

  it.each<[WidgetQuery, string]>([
    [{ bgColor: 'red' }, 'bgColor'],
    [{ gradientTo: '#12345' }, 'gradientTo'],
    [{ font: 'Arial' }, 'font'],
    [{ customHeight: '49' }, 'customHeight'],
    [{ customHeight: '601px' }, 'customHeight'],
    [{ borderRadius: 10.5 }, 'borderRadius'],
    [{ borderWidth: -1 }, 'borderWidth'],
    [{ refresh: 4 }, 'refresh'],
    [{ theme: 'sepia' as 'dark' }, 'theme'],
  ])('%j is refused, naming %s', (query, parameter) => {
    let error: unknown;
    try {
      options('normal', query);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(WidgetOptionError);
    expect((error as WidgetOptionError).parameter).toBe(parameter);
    expect((error as WidgetOptionError).message).toContain(`"${parameter}"`);
  });
});

describe('widgetView', () => {
  it('tells online, stale and offline apart', () => {
    expect(widgetView(status(), 'x').state).toBe('online');
    expect(widgetView(status({ stale: true }), 'x').state).toBe('stale');
    const offline = widgetView(offlineStatus(status().query, { error: 'timed out' }), 'x');
    expect(offline).toMatchObject({ state: 'offline', players: null, version: null, latencyMs: null, motdHtml: null, error: 'timed out' });
  });

  it('cleans server labels and keeps only PNG data URLs as favicons', () => {
    const view = widgetView(
      status({
        version: { name: '§cPaper\n1.21', protocol: 769 },
        players: { online: 3, max: 0, sample: [{ name: '§aAda', id: '0' }, { name: '', id: '1' }] },
        favicon: 'data:text/html;base64,PHNjcmlwdD4=',
      }),
      'x',
    );
    expect(view.version).toBe('Paper 1.21');
    expect(view.sample).toEqual(['Ada']);
    expect(view.players).toEqual({ online: 3, max: 0, percent: 1.5 });
    expect(view.favicon).toBeNull();
  });
});

describe('renderWidget', () => {
  it('escapes every server-provided and requested text', () => {
    const html = render(
      status({
        version: { name: HOSTILE, protocol: 1 },
        players: { online: 9, max: 10, sample: [{ name: HOSTILE, id: '0' }] },
        motd: formatMotd(`§c${HOSTILE}`),
        favicon: `data:image/png;base64,AAAA"><script>alert(3)</script>`,
      }),
      options('large'),
      HOSTILE,
    );
    const body = markup(html);
    expect(body).not.toMatch(/<img src=x|<script>alert/);
    expect(body).toContain('&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;alert(2)&lt;/script&gt;&quot;&#39;&amp;');
    // The MOTD keeps its colour; its text is escaped by the MOTD module.
    expect(body).toContain('<span style="color: #ff5555">&lt;img');
    // The favicon was not a clean PNG data URL: the default icon is used.
    expect(body).toContain(`src="${FALLBACK_ICON}"`);
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).toContain('<script>(function () {');
  });

  it('carries what the browser needs to refresh, and nothing for the demo', () => {
    const html = render(status(), options('normal', { refresh: 5 }), 'play.example.net:25566');
    expect(html).toMatch(/data-address="play\.example\.net:25566"/);
    expect(html).toContain('data-refresh-ms="5000"');
    expect(html).toContain('data-api="../.."');
    expect(html).toContain('data-mode="java"');
    const demo = markup(renderWidget({ kind: 'demo' }, options(), context));
    expect(demo).not.toContain('data-address');
    expect(demo).not.toContain('data-refresh-ms');
    expect(demo).toContain('data-state="online"');
    expect(demo).toContain('play.example.com');
  });

  it('marks the state, and renders an unknown host as offline', () => {
    expect(render(status({ stale: true }))).toMatch(/data-state="stale"[\s\S]*class="w__label">Cached</);
    expect(render(offlineStatus(status().query, { error: 'connection refused' }))).toMatch(
      /data-state="offline"[\s\S]*connection refused[\s\S]*class="w__label">Offline</,
    );
    const unknown = renderWidget({ kind: 'not_found', address: 'nowhere.example', mode: 'bedrock' }, options(), context);
    expect(unknown).toContain('data-state="offline"');
    expect(unknown).toContain('unknown host');
    expect(unknown).toContain('data-mode="bedrock"');
  });

  it('leaves out what the options turn off', () => {
    const all = markup(render(status(), options('large', { showProtocol: true })));
    for (const cls of ['w__icon', 'w__version', 'w__protocol', 'w__latency', 'w__motd', 'w__players', 'w__sample', 'w__status']) {
      expect(all).toContain(`class="${cls}`);
    }
    const none = markup(
      render(
        status(),
        options('large', {
          showFavicon: false,
          showVersion: false,
          showLatency: false,
          showMotd: false,
          showPlayers: false,
          statusIndicator: 'none',
        }),
      ),
    );
    for (const cls of ['w__icon', 'w__version', 'w__protocol', 'w__latency', 'w__motd', 'w__players', 'w__sample', 'w__status']) {
      expect(none).not.toContain(`class="${cls}`);
    }
  });

  it('uses the size default height or customHeight, and fonts only when asked', () => {
    expect(render(status(), options('large'))).toContain(`--h:${DEFAULT_HEIGHTS.large}px`);
    expect(render(status(), options('large', { customHeight: '321' }))).toContain('--h:321px');
    expect(render(status())).not.toContain('@font-face');
    const outfit = render(status(), options('normal', { font: 'Outfit' }));
    expect(outfit).toContain('url("../../widget/fonts/outfit-latin-400-normal.woff2")');
    expect(outfit).not.toMatch(/url\("?(https?:)?\/\//);
  });

  it('refuses a context that could break out of its attribute', () => {
    expect(() => renderWidget({ kind: 'demo' }, options(), { basePath: '"><script>' })).toThrow(TypeError);
  });
});

describe('widgetContentSecurityPolicy', () => {
  it('allows only the own origin and the hash of the one inline script, and any framing site', () => {
    const html = renderWidget({ kind: 'demo' }, options(), context);
    const script = /<script>([\s\S]*)<\/script>/.exec(html)![1]!;
    const hash = createHash('sha256').update(script, 'utf8').digest('base64');
    expect(widgetContentSecurityPolicy()).toBe(
      "default-src 'none'; style-src 'unsafe-inline'; font-src 'self'; img-src 'self' data:; connect-src 'self'; " +
        `script-src 'sha256-${hash}'; base-uri 'none'; form-action 'none'; frame-ancestors *`,
    );
  });
});
