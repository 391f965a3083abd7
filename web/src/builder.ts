/**
 * The embed builder: every widget, banner and badge parameter, a live preview of each, and
 * copyable snippets (iframe, HTML img, Markdown, BBCode, shields.io, plain URLs). The widget's
 * and the badge's parameter names, values and bounds come from the service's own option
 * modules, so they cannot drift apart.
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
import { BADGE_DEFAULTS, BADGE_STYLES, MAX_BADGE_LABEL_LENGTH } from '../../src/render/badge-options.js';
import { addressPath, modeParams, url } from './api.js';
import { h, uid } from './dom.js';
import { pageUrl, type Target } from './routes.js';

type Control =
  | { kind: 'select'; name: string; label: string; options: readonly string[]; def: string; labels?: Record<string, string> }
  | { kind: 'check'; name: string; label: string; def: boolean }
  | { kind: 'color'; name: string; label: string }
  | { kind: 'number'; name: string; label: string; min: number; max: number; step: number; def: number | null; unit: string }
  | { kind: 'text'; name: string; label: string; placeholder: string; maxLength: number };

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
const text = (name: string, label: string, placeholder: string, maxLength: number): Control => ({ kind: 'text', name, label, placeholder, maxLength });
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

const BADGE_GROUPS: Group[] = [
  {
    legend: 'Badge',
    controls: [
      select('style', 'Style', BADGE_STYLES, BADGE_DEFAULTS.style),
      text('label', 'Label', BADGE_DEFAULTS.label, MAX_BADGE_LABEL_LENGTH),
      color('labelColor', 'Label colour'),
      color('onlineColor', 'Online colour'),
      color('offlineColor', 'Offline colour'),
    ],
  },
];

/** One control of a form: its field, and a reader of its parameter (null when at its default or invalid). */
interface Field {
  element: HTMLElement;
  read: () => [string, string] | null;
}

type ControlOf<K extends Control['kind']> = Extract<Control, { kind: K }>;

function checkField(c: ControlOf<'check'>, id: string): Field {
  const input = h('input', { type: 'checkbox', id, name: c.name, checked: c.def });
  return {
    element: h('div', { class: 'field check' }, input, h('label', { for: id }, c.label)),
    read: () => (input.checked === c.def ? null : [c.name, String(input.checked)]),
  };
}

function selectField(c: ControlOf<'select'>, id: string): Field {
  const input = h('select', { id, name: c.name }, ...c.options.map((o) => h('option', { value: o, selected: o === c.def }, c.labels?.[o] ?? o)));
  return {
    element: h('div', { class: 'field' }, h('label', { for: id }, c.label), input),
    read: () => (input.value === c.def ? null : [c.name, input.value]),
  };
}

function colorField(c: ControlOf<'color'>, id: string): Field {
  const hint = uid('hint');
  const swatch = h('span', { class: 'swatch', 'aria-hidden': 'true', hidden: true });
  const input = h('input', { type: 'text', id, name: c.name, inputmode: 'text', placeholder: 'default', autocomplete: 'off', spellcheck: 'false', size: 8, maxlength: 7, 'aria-describedby': hint });
  const read = (): [string, string] | null => {
    const value = input.value.trim();
    const parsed = value === '' ? null : parseHexColor(value);
    input.setAttribute('aria-invalid', String(value !== '' && parsed === null));
    swatch.hidden = parsed === null;
    if (parsed) swatch.style.setProperty('background', parsed);
    return parsed ? [c.name, parsed] : null;
  };
  const element = h('div', { class: 'field' }, h('label', { for: id }, c.label), h('span', { class: 'color-input' }, swatch, input), h('span', { id: hint, class: 'hint' }, '#RGB or #RRGGBB'));
  return { element, read };
}

function numberField(c: ControlOf<'number'>, id: string): Field {
  const input = h('input', { type: 'number', id, name: c.name, min: c.min, max: c.max, step: c.step, value: c.def ?? '', placeholder: c.def === null ? 'default' : null, inputmode: 'decimal' });
  const read = (): [string, string] | null => {
    const value = input.value.trim();
    const n = Number(value);
    const valid = value === '' || (Number.isFinite(n) && n >= c.min && n <= c.max);
    input.setAttribute('aria-invalid', String(!valid));
    if (!valid || value === '' || n === c.def) return null;
    return [c.name, String(n)];
  };
  return { element: h('div', { class: 'field' }, h('label', { for: id }, `${c.label} (${c.min}–${c.max} ${c.unit})`), input), read };
}

/** Free text; empty means the API's default, shown as the placeholder. */
function textField(c: ControlOf<'text'>, id: string): Field {
  const input = h('input', { type: 'text', id, name: c.name, placeholder: c.placeholder, autocomplete: 'off', spellcheck: 'false', maxlength: c.maxLength });
  const read = (): [string, string] | null => {
    const value = input.value.trim();
    return value === '' ? null : [c.name, value];
  };
  return { element: h('div', { class: 'field' }, h('label', { for: id }, c.label), input), read };
}

function fieldOf(c: Control, id: string): Field {
  switch (c.kind) {
    case 'check':
      return checkField(c, id);
    case 'select':
      return selectField(c, id);
    case 'color':
      return colorField(c, id);
    case 'number':
      return numberField(c, id);
    case 'text':
      return textField(c, id);
  }
}

/** A form of controls whose `values()` are the parameters that differ from their defaults. */
function controlForm(prefix: string, groups: Group[], onChange: () => void) {
  const readers: Array<Field['read']> = [];
  const fieldsets = groups.map((group) => {
    const fields = group.controls.map((c) => {
      const field = fieldOf(c, uid(`${prefix}-${c.name}`));
      readers.push(field.read);
      return field.element;
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

/** What every part of the builder shares: the server's path segment, its mode flags, the live region. */
interface BuilderContext {
  target: Target;
  address: string;
  mode: URLSearchParams;
  announce: (text: string) => void;
}

/** A polite live region, and `announce`, which makes it speak again even when the text repeats. */
function liveRegion() {
  const status = h('p', { class: 'visually-hidden', role: 'status' });
  const announce = (text: string) => {
    status.textContent = '';
    setTimeout(() => (status.textContent = text), 50);
  };
  return { status, announce };
}

function builderPart(title: string, ...children: HTMLElement[]): HTMLElement {
  return h('div', { class: 'builder-part' }, h('h3', {}, title), ...children);
}

/** An image linking to the server's page, as HTML and as Markdown. */
function linkedImage(imageUrl: string, alt: string, page: string, size?: readonly [number, number]) {
  const dimensions = size ? ` width="${size[0]}" height="${size[1]}"` : '';
  return {
    html: `<a href="${attr(page)}"><img src="${attr(imageUrl)}" alt="${attr(alt)}"${dimensions}></a>`,
    markdown: `[![${markdownText(alt)}](${imageUrl})](${page})`,
  };
}

const altOf = (target: Target) => `${target.address} server status`;

/** A part of the builder with a form, a live preview and snippets that follow the form. */
interface LivePart {
  title: string;
  /** Prefix of the form's ids. */
  prefix: string;
  groups: Group[];
  preview: HTMLElement;
  snippets: Snippet[];
  /** From the parameters that differ from their defaults: the snippets' texts, and how the preview shows them. */
  update(values: Map<string, string>): { snippets: Record<string, string>; show: () => void };
}

function livePart(ctx: BuilderContext, part: LivePart): HTMLElement {
  const snippets = snippetList(part.snippets, ctx.announce);
  let show = () => {};
  // The preview follows once typing pauses, not on every key.
  const preview = debounce(() => show(), 300);
  const form = controlForm(part.prefix, part.groups, update);
  function update(): void {
    const next = part.update(form.values());
    snippets.set(next.snippets);
    show = next.show;
    preview();
  }
  update();
  return builderPart(part.title, form.form, h('div', { class: 'preview' }, part.preview), snippets.list);
}

/** Points `element` at `src` unless it already is (a new src reloads the preview). */
function setSource(element: HTMLImageElement | HTMLIFrameElement, src: string): void {
  if (element.getAttribute('src') !== src) element.src = src;
}

const previewImage = (className: string, alt: string) => h('img', { class: className, alt, loading: 'lazy', decoding: 'async' });

function widgetPart(ctx: BuilderContext): HTMLElement {
  const frame = h('iframe', { class: 'widget-preview', title: 'Widget preview', loading: 'lazy' });
  return livePart(ctx, {
    title: 'Live widget',
    prefix: 'w',
    groups: WIDGET_GROUPS,
    preview: frame,
    snippets: [
      { key: 'iframe', label: 'Widget iframe (HTML)' },
      { key: 'widget-url', label: 'Widget URL' },
    ],
    update(values) {
      const kind = (values.get('size') ?? 'normal') as (typeof WIDGET_SIZES)[number];
      values.delete('size');
      const widgetUrl = url(`api/v1/widget/${kind}/${ctx.address}`, new URLSearchParams([...ctx.mode, ...values]));
      const [width, height] = [RECOMMENDED_WIDTHS[kind], Number(values.get('customHeight') ?? DEFAULT_HEIGHTS[kind])];
      const iframe = `<iframe src="${attr(widgetUrl)}" width="${width}" height="${height}" style="border:0" title="${attr(altOf(ctx.target))}" loading="lazy"></iframe>`;
      return {
        snippets: { iframe, 'widget-url': widgetUrl },
        show: () => {
          setSource(frame, widgetUrl);
          frame.width = String(width);
          frame.height = String(height);
        },
      };
    },
  });
}

function bannerPart(ctx: BuilderContext): HTMLElement {
  const image = previewImage('banner-preview', `Banner preview for ${ctx.target.address}`);
  return livePart(ctx, {
    title: 'Banner image',
    prefix: 'b',
    groups: BANNER_GROUPS,
    preview: image,
    snippets: [
      { key: 'img', label: 'Banner image (HTML)' },
      { key: 'markdown', label: 'Banner (Markdown)' },
      { key: 'bbcode', label: 'Banner (BBCode)' },
      { key: 'banner-url', label: 'Banner URL' },
    ],
    update(values) {
      const bannerUrl = url(`api/v1/banner/${ctx.address}`, new URLSearchParams([...ctx.mode, ...values]));
      const size = BANNER_SIZES[(values.get('size') ?? 'normal') as keyof typeof BANNER_SIZES];
      const page = pageUrl(ctx.target);
      const linked = linkedImage(bannerUrl, altOf(ctx.target), page, size);
      return {
        snippets: { img: linked.html, markdown: linked.markdown, bbcode: `[url=${page}][img]${bannerUrl}[/img][/url]`, 'banner-url': bannerUrl },
        show: () => {
          setSource(image, bannerUrl);
          [image.width, image.height] = size;
        },
      };
    },
  });
}

/** The SVG badge, and the same badge drawn by shields.io from the JSON endpoint. */
function badgePart(ctx: BuilderContext): HTMLElement {
  const image = previewImage('badge-preview', `Badge preview for ${ctx.target.address}`);
  return livePart(ctx, {
    title: 'Status badge',
    prefix: 'g',
    groups: BADGE_GROUPS,
    preview: image,
    snippets: [
      { key: 'badge-markdown', label: 'Badge (Markdown)' },
      { key: 'badge-html', label: 'Badge image (HTML)' },
      { key: 'badge-url', label: 'Badge URL' },
      { key: 'shields-markdown', label: 'shields.io badge (Markdown)' },
      { key: 'shields-html', label: 'shields.io badge (HTML)' },
      { key: 'shields-url', label: 'shields.io endpoint JSON' },
    ],
    update(values) {
      const params = new URLSearchParams([...ctx.mode, ...values]);
      const badgeUrl = url(`api/v1/badge/${ctx.address}`, params);
      const endpoint = url(`api/v1/shields/${ctx.address}`, params);
      const page = pageUrl(ctx.target);
      const own = linkedImage(badgeUrl, altOf(ctx.target), page);
      const shields = linkedImage(`https://img.shields.io/endpoint?url=${encodeURIComponent(endpoint)}`, altOf(ctx.target), page);
      return {
        snippets: {
          'badge-markdown': own.markdown,
          'badge-html': own.html,
          'badge-url': badgeUrl,
          'shields-markdown': shields.markdown,
          'shields-html': shields.html,
          'shields-url': endpoint,
        },
        show: () => setSource(image, badgeUrl),
      };
    },
  });
}

function linksPart(ctx: BuilderContext): HTMLElement {
  const snippets = snippetList(
    [
      { key: 'page-url', label: 'This page' },
      { key: 'status-url', label: 'Status JSON' },
      { key: 'icon-url', label: 'Server icon (PNG)' },
    ],
    ctx.announce,
  );
  snippets.set({
    'page-url': pageUrl(ctx.target),
    'status-url': url(`api/v1/status/${ctx.address}`, ctx.mode),
    'icon-url': url('api/v1/icon/sharp', new URLSearchParams([['address', ctx.target.address], ...ctx.mode])),
  });
  return builderPart('Links', snippets.list);
}

export function embedBuilder(target: Target): HTMLElement {
  const live = liveRegion();
  const ctx: BuilderContext = { target, address: addressPath(target.address), mode: modeParams(target.mode), announce: live.announce };
  return h(
    'section',
    { class: 'panel builder', 'aria-labelledby': 'builder-title' },
    h('h2', { id: 'builder-title' }, 'Embed this server'),
    h('p', { class: 'lead' }, 'Pick the options; the previews and snippets follow. Every snippet has a copy button.'),
    widgetPart(ctx),
    bannerPart(ctx),
    badgePart(ctx),
    linksPart(ctx),
    live.status,
  );
}
