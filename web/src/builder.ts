/**
 * The embed builder: every widget and banner parameter, a live preview of each, and copyable
 * snippets (iframe, HTML img, Markdown, BBCode, plain URLs). The widget's parameter names,
 * values and bounds come from the service's own option module, so they cannot drift apart.
 */
import {
  DEFAULT_HEIGHTS,
  ICON_SIZES,
  PLAYER_BAR_STYLES,
  RECOMMENDED_WIDTHS,
  STATUS_INDICATORS,
  TEXT_ALIGNS,
  WIDGET_BOUNDS,
  WIDGET_FONTS,
  WIDGET_SIZES,
  WIDGET_THEMES,
  parseHexColor,
} from '../../src/render/widget/options.js';
import { addressPath, modeParams, url } from './api.js';
import { h, uid } from './dom.js';
import { pageUrl, type Target } from './routes.js';

type Control =
  | { kind: 'select'; name: string; label: string; options: readonly string[]; def: string; labels?: Record<string, string> }
  | { kind: 'check'; name: string; label: string; def: boolean }
  | { kind: 'color'; name: string; label: string }
  | { kind: 'number'; name: string; label: string; min: number; max: number; step: number; def: number | null; unit: string };

interface Group {
  legend: string;
  controls: Control[];
}

/** Banner sizes and bounds (src/render/banner.ts: BANNER_SIZES, BORDER_RADIUS). */
const BANNER_SIZES = { small: [400, 130], normal: [600, 180], large: [800, 240] } as const;
const BANNER_RADIUS = { min: 0, max: 4, default: 0.5 };

const select = (name: string, label: string, options: readonly string[], def: string, labels?: Record<string, string>): Control => ({
  kind: 'select',
  name,
  label,
  options,
  def,
  ...(labels ? { labels } : {}),
});
const check = (name: string, label: string, def: boolean): Control => ({ kind: 'check', name, label, def });
const color = (name: string, label: string): Control => ({ kind: 'color', name, label });
const bound = (name: string, label: string, b: { min: number; max: number }, step: number, def: number | null, unit: string): Control => ({
  kind: 'number',
  name,
  label,
  min: b.min,
  max: b.max,
  step,
  def,
  unit,
});

const WIDGET_GROUPS: Group[] = [
  {
    legend: 'Layout',
    controls: [
      select('size', 'Size', WIDGET_SIZES, 'normal'),
      select('theme', 'Theme', WIDGET_THEMES, 'dark'),
      select('font', 'Font', ['', ...WIDGET_FONTS], '', { '': 'System font' }),
      select('textAlign', 'Text alignment', TEXT_ALIGNS, 'left'),
      select('iconSize', 'Icon size', ICON_SIZES, 'medium'),
      bound('customHeight', 'Custom height', WIDGET_BOUNDS.customHeight, 1, null, 'px'),
      bound('refresh', 'Refresh every', WIDGET_BOUNDS.refresh, 1, WIDGET_BOUNDS.refresh.default, 's'),
    ],
  },
  {
    legend: 'Show',
    controls: [
      check('showPlayers', 'Players', true),
      check('showVersion', 'Version', true),
      check('showMotd', 'MOTD', true),
      check('showLatency', 'Latency', true),
      check('showFavicon', 'Icon', true),
      check('showProtocol', 'Protocol number', false),
    ],
  },
  {
    legend: 'Colours',
    controls: [
      color('bgColor', 'Background'),
      color('textColor', 'Text'),
      color('onlineColor', 'Online'),
      color('offlineColor', 'Offline'),
      check('gradientBg', 'Gradient background', false),
      color('gradientFrom', 'Gradient from'),
      color('gradientTo', 'Gradient to'),
    ],
  },
  {
    legend: 'Border and effects',
    controls: [
      check('showBorder', 'Border', false),
      bound('borderWidth', 'Border width', WIDGET_BOUNDS.borderWidth, 1, WIDGET_BOUNDS.borderWidth.default, 'px'),
      bound('borderRadius', 'Corner radius', WIDGET_BOUNDS.borderRadius, 0.25, WIDGET_BOUNDS.borderRadius.default, 'rem'),
      select('statusIndicator', 'Status indicator', STATUS_INDICATORS, 'dot'),
      select('playerBarStyle', 'Player bar', PLAYER_BAR_STYLES, 'default'),
      check('hoverEffect', 'Hover effect', false),
      check('glowEffect', 'Glow', false),
      check('boxShadow', 'Shadow', false),
    ],
  },
];

const BANNER_GROUPS: Group[] = [
  {
    legend: 'Banner',
    controls: [
      select('size', 'Size', Object.keys(BANNER_SIZES), 'normal'),
      select('style', 'Style', ['modern', 'classic'], 'modern'),
      color('textColor', 'Text colour'),
      color('accentColor', 'Accent colour'),
      check('showFavicon', 'Icon', true),
      check('showMotd', 'MOTD', true),
      check('showPing', 'Latency', true),
      bound('borderRadius', 'Corner radius', BANNER_RADIUS, 0.25, BANNER_RADIUS.default, '× 16 px'),
    ],
  },
];

/** A form of controls whose `values()` are the parameters that differ from their defaults. */
function controlForm(prefix: string, groups: Group[], onChange: () => void) {
  const readers: Array<() => [string, string] | null> = [];
  const fieldsets = groups.map((group) => {
    const fields = group.controls.map((c) => {
      const id = uid(`${prefix}-${c.name}`);
      if (c.kind === 'check') {
        const input = h('input', { type: 'checkbox', id, name: c.name, checked: c.def });
        readers.push(() => (input.checked === c.def ? null : [c.name, String(input.checked)]));
        return h('div', { class: 'field check' }, input, h('label', { for: id }, c.label));
      }
      if (c.kind === 'select') {
        const input = h('select', { id, name: c.name }, ...c.options.map((o) => h('option', { value: o, selected: o === c.def }, c.labels?.[o] ?? o)));
        readers.push(() => (input.value === c.def ? null : [c.name, input.value]));
        return h('div', { class: 'field' }, h('label', { for: id }, c.label), input);
      }
      if (c.kind === 'color') {
        const hint = uid('hint');
        const swatch = h('span', { class: 'swatch', 'aria-hidden': 'true', hidden: true });
        const input = h('input', { type: 'text', id, name: c.name, inputmode: 'text', placeholder: 'default', autocomplete: 'off', spellcheck: 'false', size: 8, maxlength: 7, 'aria-describedby': hint });
        readers.push(() => {
          const value = input.value.trim();
          const parsed = value === '' ? null : parseHexColor(value);
          input.setAttribute('aria-invalid', String(value !== '' && parsed === null));
          swatch.hidden = parsed === null;
          if (parsed) swatch.style.setProperty('background', parsed);
          return parsed ? [c.name, parsed] : null;
        });
        return h('div', { class: 'field' }, h('label', { for: id }, c.label), h('span', { class: 'color-input' }, swatch, input), h('span', { id: hint, class: 'hint' }, '#RGB or #RRGGBB'));
      }
      const input = h('input', { type: 'number', id, name: c.name, min: c.min, max: c.max, step: c.step, value: c.def ?? '', placeholder: c.def === null ? 'default' : null, inputmode: 'decimal' });
      readers.push(() => {
        const value = input.value.trim();
        const n = Number(value);
        const valid = value === '' || (Number.isFinite(n) && n >= c.min && n <= c.max);
        input.setAttribute('aria-invalid', String(!valid));
        if (!valid || value === '' || n === c.def) return null;
        return [c.name, String(n)];
      });
      return h('div', { class: 'field' }, h('label', { for: id }, `${c.label} (${c.min}–${c.max} ${c.unit})`), input);
    });
    return h('fieldset', {}, h('legend', {}, group.legend), h('div', { class: 'fields' }, ...fields));
  });
  const form = h('form', { class: 'controls', novalidate: true }, ...fieldsets);
  form.addEventListener('input', onChange);
  form.addEventListener('change', onChange);
  form.addEventListener('submit', (e) => e.preventDefault());
  return {
    form,
    values(): Map<string, string> {
      const out = new Map<string, string>();
      for (const read of readers) {
        const pair = read();
        if (pair) out.set(pair[0], pair[1]);
      }
      return out;
    },
  };
}

const attr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const markdownText = (s: string) => s.replace(/[[\]\\]/g, (c) => `\\${c}`);

async function copy(text: string, field: HTMLTextAreaElement): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    field.focus();
    field.select();
    // Where the asynchronous clipboard is refused (no permission, older browsers).
    return document.execCommand('copy');
  }
}

interface Snippet {
  key: string;
  label: string;
}

function snippetList(snippets: Snippet[], announce: (text: string) => void) {
  const fields = new Map<string, HTMLTextAreaElement>();
  const list = h(
    'div',
    { class: 'snippets' },
    ...snippets.map((snippet) => {
      const id = uid(`snippet-${snippet.key}`);
      const field = h('textarea', { id, class: 'code', readonly: true, rows: 2, spellcheck: 'false', 'data-snippet': snippet.key });
      fields.set(snippet.key, field);
      const button = h('button', { type: 'button', class: 'copy', 'aria-label': `Copy ${snippet.label}` }, 'Copy');
      button.addEventListener('click', () => {
        void copy(field.value, field).then((ok) => announce(ok ? `${snippet.label} copied.` : 'Copy failed: select the text and copy it.'));
      });
      return h('div', { class: 'snippet' }, h('label', { for: id }, snippet.label), h('div', { class: 'snippet-row' }, field, button));
    }),
  );
  return {
    list,
    set(values: Record<string, string>) {
      for (const [key, value] of Object.entries(values)) {
        const field = fields.get(key);
        if (field && field.value !== value) field.value = value;
      }
    },
  };
}

function debounce(fn: () => void, ms: number): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(fn, ms);
  };
}

export function embedBuilder(target: Target): HTMLElement {
  const status = h('p', { class: 'visually-hidden', role: 'status' });
  const announce = (text: string) => {
    status.textContent = '';
    setTimeout(() => (status.textContent = text), 50);
  };
  const address = addressPath(target.address);
  const mode = modeParams(target.mode);

  const widgetFrame = h('iframe', { class: 'widget-preview', title: 'Widget preview', loading: 'lazy' });
  const bannerImage = h('img', { class: 'banner-preview', alt: `Banner preview for ${target.address}`, loading: 'lazy', decoding: 'async' });
  const widgetSnippets = snippetList(
    [
      { key: 'iframe', label: 'Widget iframe (HTML)' },
      { key: 'widget-url', label: 'Widget URL' },
    ],
    announce,
  );
  const bannerSnippets = snippetList(
    [
      { key: 'img', label: 'Banner image (HTML)' },
      { key: 'markdown', label: 'Banner (Markdown)' },
      { key: 'bbcode', label: 'Banner (BBCode)' },
      { key: 'banner-url', label: 'Banner URL' },
    ],
    announce,
  );
  const linkSnippets = snippetList(
    [
      { key: 'page-url', label: 'This page' },
      { key: 'status-url', label: 'Status JSON' },
      { key: 'icon-url', label: 'Server icon (PNG)' },
    ],
    announce,
  );

  let widgetUrl = '';
  let bannerUrl = '';
  let widgetSize: [number, number] = [RECOMMENDED_WIDTHS.normal, DEFAULT_HEIGHTS.normal];
  let bannerSize: readonly [number, number] = BANNER_SIZES.normal;

  const previewWidget = debounce(() => {
    if (widgetFrame.getAttribute('src') !== widgetUrl) widgetFrame.src = widgetUrl;
    widgetFrame.width = String(widgetSize[0]);
    widgetFrame.height = String(widgetSize[1]);
  }, 300);
  const previewBanner = debounce(() => {
    if (bannerImage.getAttribute('src') !== bannerUrl) bannerImage.src = bannerUrl;
    bannerImage.width = bannerSize[0];
    bannerImage.height = bannerSize[1];
  }, 300);

  const widget = controlForm('w', WIDGET_GROUPS, () => updateWidget());
  const banner = controlForm('b', BANNER_GROUPS, () => updateBanner());

  function updateWidget(): void {
    const values = widget.values();
    const size = (values.get('size') ?? 'normal') as (typeof WIDGET_SIZES)[number];
    values.delete('size');
    const params = new URLSearchParams([...mode, ...values]);
    widgetUrl = url(`api/v1/widget/${size}/${address}`, params);
    const height = Number(values.get('customHeight') ?? DEFAULT_HEIGHTS[size]);
    widgetSize = [RECOMMENDED_WIDTHS[size], height];
    widgetSnippets.set({
      iframe: `<iframe src="${attr(widgetUrl)}" width="${widgetSize[0]}" height="${height}" style="border:0" title="${attr(`${target.address} server status`)}" loading="lazy"></iframe>`,
      'widget-url': widgetUrl,
    });
    previewWidget();
  }

  function updateBanner(): void {
    const values = banner.values();
    const params = new URLSearchParams([...mode, ...values]);
    bannerUrl = url(`api/v1/banner/${address}`, params);
    bannerSize = BANNER_SIZES[(values.get('size') ?? 'normal') as keyof typeof BANNER_SIZES];
    const alt = `${target.address} server status`;
    const page = pageUrl(target);
    bannerSnippets.set({
      img: `<a href="${attr(page)}"><img src="${attr(bannerUrl)}" alt="${attr(alt)}" width="${bannerSize[0]}" height="${bannerSize[1]}"></a>`,
      markdown: `[![${markdownText(alt)}](${bannerUrl})](${page})`,
      bbcode: `[url=${page}][img]${bannerUrl}[/img][/url]`,
      'banner-url': bannerUrl,
    });
    previewBanner();
  }

  const iconParams = new URLSearchParams([['address', target.address], ...mode]);
  linkSnippets.set({
    'page-url': pageUrl(target),
    'status-url': url(`api/v1/status/${address}`, mode),
    'icon-url': url('api/v1/icon/sharp', iconParams),
  });
  updateWidget();
  updateBanner();

  return h(
    'section',
    { class: 'panel builder', 'aria-labelledby': 'builder-title' },
    h('h2', { id: 'builder-title' }, 'Embed this server'),
    h('p', { class: 'lead' }, 'Pick the options; the previews and snippets follow. Every snippet has a copy button.'),
    h(
      'div',
      { class: 'builder-part' },
      h('h3', {}, 'Live widget'),
      widget.form,
      h('div', { class: 'preview' }, widgetFrame),
      widgetSnippets.list,
    ),
    h(
      'div',
      { class: 'builder-part' },
      h('h3', {}, 'Banner image'),
      banner.form,
      h('div', { class: 'preview' }, bannerImage),
      bannerSnippets.list,
    ),
    h('div', { class: 'builder-part' }, h('h3', {}, 'Links'), linkSnippets.list),
    status,
  );
}
