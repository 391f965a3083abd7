/**
 * The widget's stylesheet. Every value written into it is a validated hex colour, a number
 * or a constant of this module: nothing from a request or a server reaches the CSS as text.
 */
import { luminance, mixColors } from '../color.js';
import { fontFaceCss } from './fonts.js';
import type { CssHexColor, IconSize, WidgetOptions, WidgetSize } from './options.js';
import { widgetHeight } from './options.js';

interface SizeMetrics {
  padding: string;
  gap: number;
  gapX: number;
  nameSize: number;
  metaSize: number;
  motdSize: number;
  bar: number;
  icon: Readonly<Record<IconSize, number>>;
}

export const SIZE_METRICS: Readonly<Record<WidgetSize, SizeMetrics>> = {
  small: { padding: '0 14px', gap: 8, gapX: 12, nameSize: 14, metaSize: 12, motdSize: 13, bar: 3, icon: { small: 28, medium: 36, large: 44 } },
  normal: { padding: '12px 16px', gap: 8, gapX: 12, nameSize: 15, metaSize: 12, motdSize: 13, bar: 6, icon: { small: 36, medium: 48, large: 60 } },
  large: { padding: '16px 20px', gap: 10, gapX: 14, nameSize: 18, metaSize: 13, motdSize: 15, bar: 8, icon: { small: 48, medium: 64, large: 80 } },
};

interface Palette {
  bg: CssHexColor;
  text: string;
  muted: string;
  line: string;
  track: string;
  /** Background of the MOTD: always dark, as in the game's server list. */
  screen: string;
  screenLine: string;
}

const DARK: Palette = {
  bg: '#111827',
  text: '#f3f4f6',
  muted: '#9ca3af',
  line: 'rgba(255,255,255,.14)',
  track: 'rgba(255,255,255,.09)',
  screen: 'rgba(0,0,0,.32)',
  screenLine: 'rgba(255,255,255,.05)',
};

const LIGHT: Palette = {
  bg: '#ffffff',
  text: '#0f172a',
  muted: '#64748b',
  line: 'rgba(15,23,42,.14)',
  track: 'rgba(15,23,42,.08)',
  screen: '#1b1f2a',
  screenLine: 'rgba(15,23,42,.12)',
};

const JUSTIFY = { left: 'flex-start', center: 'center', right: 'flex-end' } as const;

const STALE_COLOR = '#f59e0b';
const FAIR_COLOR = '#f59e0b';

const SYSTEM_FONTS =
  'system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans","Liberation Sans",sans-serif';


/** The background the options ask for: a colour, or the two ends of the gradient. */
export function widgetBackground(options: WidgetOptions): { from: CssHexColor; to: CssHexColor | null } {
  const base = options.theme === 'light' ? LIGHT.bg : DARK.bg;
  if (options.gradientBg) {
    const from = options.gradientFrom ?? mixColors(options.bgColor ?? base, options.onlineColor, options.theme === 'light' ? 0.16 : 0.3);
    const to = options.gradientTo ?? options.bgColor ?? (options.theme === 'light' ? '#f8fafc' : '#0b1120');
    return { from, to };
  }
  return { from: options.bgColor ?? base, to: null };
}

/**
 * Text colours follow the background: the theme's own background uses the theme's palette;
 * a custom background or gradient picks the dark or light palette by its lightness, so that
 * `bgColor` alone never gives unreadable text. `textColor` overrides both.
 */
function palette(options: WidgetOptions): Palette {
  if (options.bgColor === null && !options.gradientBg) return options.theme === 'light' ? LIGHT : DARK;
  const { from, to } = widgetBackground(options);
  const lightness = to === null ? luminance(from) : (luminance(from) + luminance(to)) / 2;
  return lightness > 0.4 ? LIGHT : DARK;
}

/** Room kept around the card for effects drawn outside it, so that the iframe does not cut them. */
export function effectInset(options: WidgetOptions): number {
  return Math.max(options.boxShadow ? 8 : 0, options.glowEffect ? 8 : 0, options.hoverEffect ? 3 : 0);
}

export function iconPixels(options: WidgetOptions): number {
  return SIZE_METRICS[options.size].icon[options.iconSize];
}

export function widgetCss(options: WidgetOptions, apiBase: string): string {
  const m = SIZE_METRICS[options.size];
  const p = palette(options);
  const { from, to } = widgetBackground(options);
  const text = options.textColor ?? p.text;
  const muted = options.textColor ? `color-mix(in srgb,${options.textColor} 62%,transparent)` : p.muted;
  const family = options.font ? `"${options.font}",${SYSTEM_FONTS}` : SYSTEM_FONTS;
  const radius = Math.round(options.borderRadius * 16 * 100) / 100;
  const vars = [
    `--h:${widgetHeight(options)}px`,
    `--inset:${effectInset(options)}px`,
    `--bg:${from}`,
    `--bg-image:${to === null ? 'none' : `linear-gradient(135deg,${from},${to})`}`,
    `--text:${text}`,
    `--muted:${muted}`,
    `--line:${p.line}`,
    `--track:${p.track}`,
    `--screen:${p.screen}`,
    `--screen-line:${p.screenLine}`,
    `--online:${options.onlineColor}`,
    `--offline:${options.offlineColor}`,
    `--stale:${STALE_COLOR}`,
    `--fair:${FAIR_COLOR}`,
    `--radius:${radius}px`,
    `--bw:${options.borderWidth}px`,
    `--font:${family}`,
    `--align:${options.textAlign}`,
    `--justify:${JUSTIFY[options.textAlign]}`,
    `--pad:${m.padding}`,
    `--gap:${m.gap}px`,
    `--gap-x:${m.gapX}px`,
    `--fs-name:${m.nameSize}px`,
    `--fs-meta:${m.metaSize}px`,
    `--fs-motd:${m.motdSize}px`,
    `--bar:${m.bar}px`,
    `--icon:${iconPixels(options)}px`,
  ];
  return [options.font ? fontFaceCss(options.font, apiBase) : '', `:root{${vars.join(';')}}`, BASE_CSS]
    .filter((part) => part !== '')
    .join('\n');
}

const mix = (color: string, share: number) => `color-mix(in srgb,${color} ${share}%,transparent)`;

/** Shared by every widget; the variables above make the differences. */
const BASE_CSS = `
*,*::before,*::after{box-sizing:border-box}
[hidden]{display:none!important}
html,body{margin:0;padding:0;height:var(--h);overflow:hidden;background:transparent}
body{padding:var(--inset)}
.w{--state:var(--online);position:relative;display:flex;flex-direction:column;gap:var(--gap);width:100%;height:100%;padding:var(--pad);overflow:hidden;
background-color:var(--bg);background-image:var(--bg-image);color:var(--text);font-family:var(--font);font-size:var(--fs-meta);line-height:1.35;
text-align:var(--align);border-radius:var(--radius);-webkit-font-smoothing:antialiased;-moz-osx-font-smoothing:grayscale;
box-shadow:var(--sh-glow,0 0 #0000),var(--sh-drop,0 0 #0000),var(--sh-hover,0 0 #0000)}
.w[data-state=offline]{--state:var(--offline)}
.w[data-state=stale]{--state:var(--stale)}
.w--small{justify-content:center}
.w--border{border:var(--bw) solid var(--line)}
.w--glow{--sh-glow:0 0 0 1px ${mix('var(--state)', 50)},0 0 8px 1px ${mix('var(--state)', 45)}}
.w--shadow{--sh-drop:0 4px 10px -3px rgba(0,0,0,.5),0 1px 3px rgba(0,0,0,.22)}
.w--hover{transition:transform .18s ease,box-shadow .18s ease}
.w--hover:hover{transform:translateY(-2px);--sh-hover:inset 0 0 0 1px ${mix('var(--state)', 55)}}
.w--hover.w--shadow:hover{--sh-drop:0 6px 12px -4px rgba(0,0,0,.55),0 2px 4px rgba(0,0,0,.22)}
.w__head{display:flex;align-items:center;gap:var(--gap-x);min-width:0;flex:none}
.w__icon{flex:none;display:block;width:var(--icon);height:var(--icon);border-radius:calc(var(--icon)*.16);object-fit:cover;background:var(--track)}
.w__icon--pixel{image-rendering:pixelated}
.w[data-state=offline] .w__icon{filter:grayscale(1);opacity:.55}
.w__body{flex:1 1 auto;min-width:0}
.w__name{font-size:var(--fs-name);font-weight:600;letter-spacing:-.01em;line-height:1.25;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
/* One line: items that do not fit wrap onto a second line, which is cut off whole. */
.w__meta{display:flex;flex-wrap:wrap;justify-content:var(--justify);height:calc(1.35em + 3px);margin-top:3px;overflow:hidden;color:var(--muted);font-variant-numeric:tabular-nums}
.w__meta>*{min-width:0;max-width:100%;overflow:hidden;white-space:nowrap;text-overflow:ellipsis}
.w__meta>:not([hidden])~:not([hidden])::before{content:"\\2022";margin:0 .5em;opacity:.5}
.w__error{color:var(--offline)}
.w__online{color:var(--text);font-weight:700}
.w__picon{width:.95em;height:.95em;margin-right:.3em;vertical-align:-.12em;fill:currentColor;opacity:.85}
.w__latency{white-space:nowrap}
.w__signal{display:inline-flex;align-items:flex-end;gap:1px;height:9px;margin-right:.4em;vertical-align:-1px}
.w__signal i{display:block;width:3px;border-radius:1px;background:var(--track)}
.w__signal i:nth-child(1){height:4px}.w__signal i:nth-child(2){height:6.5px}.w__signal i:nth-child(3){height:9px}
.w__latency[data-quality=good] .w__signal i{background:var(--online)}
.w__latency[data-quality=fair] .w__signal i:nth-child(-n+2){background:var(--fair)}
.w__latency[data-quality=poor] .w__signal i:nth-child(1){background:var(--offline)}
.w__status{flex:none;display:inline-flex;align-items:center;gap:6px;font-weight:500;color:var(--muted);white-space:nowrap}
.w__dot{flex:none;width:8px;height:8px;border-radius:50%;background:var(--state);box-shadow:0 0 0 3px ${mix('var(--state)', 22)}}
.w[data-state=online] .w__dot{animation:w-pulse 2.4s ease-out infinite}
@keyframes w-pulse{0%{box-shadow:0 0 0 0 ${mix('var(--state)', 55)}}70%,100%{box-shadow:0 0 0 7px ${mix('var(--state)', 0)}}}
.w--ind-text .w__dot{display:none}
.w--ind-text .w__status{color:var(--state);font-weight:700;font-size:.92em;letter-spacing:.06em;text-transform:uppercase}
.w--ind-badge .w__status{gap:6px;padding:3px 10px 3px 8px;border-radius:999px;color:var(--state);font-weight:600;
background:${mix('var(--state)', 14)};box-shadow:inset 0 0 0 1px ${mix('var(--state)', 34)}}
.w.w--ind-badge[data-state] .w__dot{width:6px;height:6px;box-shadow:none;animation:none}
.w__motd{flex:1 1 auto;min-height:0;display:flex;flex-direction:column;justify-content:center;overflow:hidden;padding:5px 10px;
background:var(--screen);box-shadow:inset 0 0 0 1px var(--screen-line);border-radius:max(4px,min(10px,calc(var(--radius)*.6)));
color:#aaaaaa;font-size:var(--fs-motd);line-height:1.35;text-shadow:1px 1px 0 rgba(0,0,0,.35)}
.w__motd-text{white-space:pre-wrap;overflow-wrap:anywhere;overflow:hidden}
.w__motd--offline{color:#8b93a1;font-style:italic;text-align:center}
.mc-obfuscated{filter:blur(2.5px)}
.w__players{flex:none;display:flex;flex-direction:column;gap:6px}
.w__prow{display:flex;align-items:baseline;justify-content:space-between;gap:8px;color:var(--muted);font-variant-numeric:tabular-nums}
.w__plabel{font-size:.85em;font-weight:600;letter-spacing:.08em;text-transform:uppercase}
.w__bar{height:var(--bar);border-radius:999px;background:var(--track);overflow:hidden}
.w--small .w__bar{position:absolute;left:0;right:0;bottom:0;border-radius:0}
.w__fill{height:100%;border-radius:inherit;background-color:var(--state);transition:width .6s cubic-bezier(.2,.8,.2,1)}
.w[data-state=offline] .w__fill{width:0!important}
.w--bar-gradient .w__fill{background-image:linear-gradient(90deg,color-mix(in srgb,var(--state) 40%,#ffffff),var(--state))}
.w--bar-striped .w__fill,.w--bar-animated .w__fill{background-size:14px 14px;background-image:linear-gradient(45deg,
rgba(255,255,255,.24) 25%,transparent 25%,transparent 50%,rgba(255,255,255,.24) 50%,rgba(255,255,255,.24) 75%,transparent 75%,transparent)}
.w--bar-animated .w__fill{animation:w-stripes .9s linear infinite}
@keyframes w-stripes{from{background-position:14px 0}to{background-position:0 0}}
.w__sample{display:flex;flex-wrap:wrap;gap:5px;height:20px;overflow:hidden;margin:2px 0 0;padding:0;list-style:none}
.w--align-center .w__sample{justify-content:center}.w--align-right .w__sample{justify-content:flex-end}
.w__sample li{padding:2px 8px;border-radius:999px;background:var(--track);color:var(--muted);font-size:11px;line-height:16px;white-space:nowrap}
.w__sample .w__more{background:transparent;padding-left:2px}
@media (prefers-reduced-motion:reduce){.w,.w *{animation:none!important;transition:none!important}}
`;
