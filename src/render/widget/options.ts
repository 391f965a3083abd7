/**
 * The widget's options: allowed values, bounds, defaults (GET /widget/{size}/{address} in the
 * OpenAPI document) and the normalisation of the values Ajv cannot check on its own (hex
 * colours, CSS pixels).
 * Pure: the HTTP layer validates enums, booleans and numeric bounds with the same constants.
 */
import { parseHexColor } from '../color.js';

export const WIDGET_SIZES = ['small', 'normal', 'large'] as const;
export const WIDGET_THEMES = ['dark', 'light'] as const;
export const STATUS_INDICATORS = ['dot', 'text', 'badge', 'none'] as const;
export const ICON_SIZES = ['small', 'medium', 'large'] as const;
export const WIDGET_FONTS = ['Inter', 'Roboto', 'Poppins', 'Montserrat', 'Outfit'] as const;
export const TEXT_ALIGNS = ['left', 'center', 'right'] as const;
export const PLAYER_BAR_STYLES = ['default', 'gradient', 'striped', 'animated'] as const;

export type WidgetSize = (typeof WIDGET_SIZES)[number];
export type WidgetTheme = (typeof WIDGET_THEMES)[number];
export type StatusIndicator = (typeof STATUS_INDICATORS)[number];
export type IconSize = (typeof ICON_SIZES)[number];
export type WidgetFont = (typeof WIDGET_FONTS)[number];
export type TextAlign = (typeof TEXT_ALIGNS)[number];
export type PlayerBarStyle = (typeof PLAYER_BAR_STYLES)[number];

/** `#rrggbb`, lowercase: safe to write into CSS as it is. */
export type CssHexColor = `#${string}`;

/** Height of the whole widget page in CSS pixels when `customHeight` is not given. */
export const DEFAULT_HEIGHTS: Readonly<Record<WidgetSize, number>> = { small: 72, normal: 180, large: 256 };

/** The width the widget is designed for; it fills whatever width the embedding iframe has. */
export const RECOMMENDED_WIDTHS: Readonly<Record<WidgetSize, number>> = { small: 320, normal: 420, large: 560 };

/** Inclusive bounds of the numeric parameters. */
export const WIDGET_BOUNDS = {
  /** CSS pixels, 50 to 600. */
  customHeight: { min: 50, max: 600 },
  /** rem (1 rem = 16 px); default 0.75. */
  borderRadius: { min: 0, max: 10, default: 0.75 },
  /** CSS pixels; drawn only with `showBorder=true`. */
  borderWidth: { min: 0, max: 10, default: 1 },
  /** Seconds between two refreshes of the live data in the browser. */
  refresh: { min: 5, max: 3600, default: 60 },
} as const;

export const DEFAULT_ONLINE_COLOR: CssHexColor = '#10b981';
export const DEFAULT_OFFLINE_COLOR: CssHexColor = '#ef4444';

export interface WidgetOptions {
  size: WidgetSize;
  theme: WidgetTheme;
  showPlayers: boolean;
  showVersion: boolean;
  showMotd: boolean;
  showLatency: boolean;
  showFavicon: boolean;
  showProtocol: boolean;
  showBorder: boolean;
  bgColor: CssHexColor | null;
  textColor: CssHexColor | null;
  onlineColor: CssHexColor;
  offlineColor: CssHexColor;
  gradientBg: boolean;
  gradientFrom: CssHexColor | null;
  gradientTo: CssHexColor | null;
  statusIndicator: StatusIndicator;
  iconSize: IconSize;
  font: WidgetFont | null;
  textAlign: TextAlign;
  /** CSS pixels, or null for the size's default height. */
  customHeight: number | null;
  /** rem. */
  borderRadius: number;
  /** CSS pixels. */
  borderWidth: number;
  hoverEffect: boolean;
  glowEffect: boolean;
  boxShadow: boolean;
  playerBarStyle: PlayerBarStyle;
  /** Seconds between refreshes in the browser. */
  refreshSeconds: number;
}

export function defaultWidgetOptions(size: WidgetSize): WidgetOptions {
  return {
    size,
    theme: 'dark',
    showPlayers: true,
    showVersion: true,
    showMotd: true,
    showLatency: true,
    showFavicon: true,
    showProtocol: false,
    showBorder: false,
    bgColor: null,
    textColor: null,
    onlineColor: DEFAULT_ONLINE_COLOR,
    offlineColor: DEFAULT_OFFLINE_COLOR,
    gradientBg: false,
    gradientFrom: null,
    gradientTo: null,
    statusIndicator: 'dot',
    iconSize: 'medium',
    font: null,
    textAlign: 'left',
    customHeight: null,
    borderRadius: WIDGET_BOUNDS.borderRadius.default,
    borderWidth: WIDGET_BOUNDS.borderWidth.default,
    hoverEffect: false,
    glowEffect: false,
    boxShadow: false,
    playerBarStyle: 'default',
    refreshSeconds: WIDGET_BOUNDS.refresh.default,
  };
}

/** A parameter value the widget cannot use; `parameter` is the query parameter's name. */
export class WidgetOptionError extends Error {
  constructor(
    readonly parameter: string,
    message: string,
  ) {
    super(message);
    this.name = 'WidgetOptionError';
  }
}

export { parseHexColor };

const CSS_PIXELS = /^(\d{1,4})(px)?$/i;

/** `120` or `120px` → 120; anything else (decimals, other units, signs) → null. */
export function parseCssPixels(value: string): number | null {
  const match = CSS_PIXELS.exec(value.trim());
  return match ? Number(match[1]) : null;
}

/**
 * The query as the HTTP layer hands it over: enums, booleans and numbers already checked
 * against the constants above; colours and `customHeight` still raw strings.
 */
export type WidgetQuery = Partial<
  Omit<WidgetOptions, 'size' | 'font' | 'customHeight' | 'refreshSeconds' | `${'bg' | 'text' | 'online' | 'offline'}Color` | 'gradientFrom' | 'gradientTo'>
> & {
  bgColor?: string;
  textColor?: string;
  onlineColor?: string;
  offlineColor?: string;
  gradientFrom?: string;
  gradientTo?: string;
  /** Any case: `inter` is `Inter`. */
  font?: string;
  customHeight?: string;
  refresh?: number;
};

const COLOR_PARAMETERS = ['bgColor', 'textColor', 'onlineColor', 'offlineColor', 'gradientFrom', 'gradientTo'] as const;

function inBounds(parameter: keyof typeof WIDGET_BOUNDS, value: number, unit: string): number {
  const { min, max } = WIDGET_BOUNDS[parameter];
  if (!Number.isFinite(value) || value < min || value > max) {
    throw new WidgetOptionError(parameter, `The query parameter "${parameter}" must be from ${min} to ${max}${unit}.`);
  }
  return value;
}

/**
 * Widget options from a request's query; throws WidgetOptionError naming the first parameter
 * that cannot be used. Unknown keys are not looked at.
 */
export function resolveWidgetOptions(size: WidgetSize, query: WidgetQuery): WidgetOptions {
  const options = defaultWidgetOptions(size);
  const flags = [
    'showPlayers',
    'showVersion',
    'showMotd',
    'showLatency',
    'showFavicon',
    'showProtocol',
    'showBorder',
    'gradientBg',
    'hoverEffect',
    'glowEffect',
    'boxShadow',
  ] as const;
  for (const flag of flags) {
    const value = query[flag];
    if (value !== undefined) options[flag] = value;
  }
  for (const parameter of COLOR_PARAMETERS) {
    const raw = query[parameter];
    if (raw === undefined) continue;
    const color = parseHexColor(raw);
    if (color === null) {
      throw new WidgetOptionError(
        parameter,
        `The query parameter "${parameter}" must be a hex colour: #RGB or #RRGGBB (send # as %23, or leave it out).`,
      );
    }
    options[parameter] = color;
  }
  if (query.theme !== undefined) options.theme = oneOf('theme', query.theme, WIDGET_THEMES);
  if (query.statusIndicator !== undefined) options.statusIndicator = oneOf('statusIndicator', query.statusIndicator, STATUS_INDICATORS);
  if (query.iconSize !== undefined) options.iconSize = oneOf('iconSize', query.iconSize, ICON_SIZES);
  if (query.textAlign !== undefined) options.textAlign = oneOf('textAlign', query.textAlign, TEXT_ALIGNS);
  if (query.playerBarStyle !== undefined) options.playerBarStyle = oneOf('playerBarStyle', query.playerBarStyle, PLAYER_BAR_STYLES);
  if (query.font !== undefined) {
    const font = WIDGET_FONTS.find((name) => name.toLowerCase() === query.font!.toLowerCase());
    if (!font) throw new WidgetOptionError('font', `The query parameter "font" must be one of ${WIDGET_FONTS.join(', ')}.`);
    options.font = font;
  }
  if (query.customHeight !== undefined) {
    const pixels = parseCssPixels(query.customHeight);
    const { min, max } = WIDGET_BOUNDS.customHeight;
    if (pixels === null || pixels < min || pixels > max) {
      throw new WidgetOptionError(
        'customHeight',
        `The query parameter "customHeight" must be a whole number of pixels from ${min} to ${max}, such as 120 or 120px.`,
      );
    }
    options.customHeight = pixels;
  }
  if (query.borderRadius !== undefined) options.borderRadius = inBounds('borderRadius', query.borderRadius, ' (rem)');
  if (query.borderWidth !== undefined) options.borderWidth = inBounds('borderWidth', query.borderWidth, ' (px)');
  if (query.refresh !== undefined) options.refreshSeconds = Math.round(inBounds('refresh', query.refresh, ' (seconds)'));
  return options;
}

function oneOf<T extends string>(parameter: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new WidgetOptionError(parameter, `The query parameter "${parameter}" must be one of ${allowed.join(', ')}.`);
}

/** The widget's total height in CSS pixels. */
export function widgetHeight(options: WidgetOptions): number {
  return options.customHeight ?? DEFAULT_HEIGHTS[options.size];
}
