/**
 * The sizes, bounds and options of the images, apart from the code that draws them: the HTTP
 * layer builds its schemas from these at start-up without loading @napi-rs/canvas or sharp.
 */

export const BANNER_SIZES = {
  small: { width: 400, height: 130 },
  normal: { width: 600, height: 180 },
  large: { width: 800, height: 240 },
} as const;
export type BannerSize = keyof typeof BANNER_SIZES;
export type BannerStyle = 'modern' | 'classic';

/** `borderRadius` is a multiplier of 16 px at the normal size (0.5 → 8 px), from 0 to 4. */
export const BORDER_RADIUS = { min: 0, max: 4, default: 0.5, unitPx: 16 } as const;

export interface BannerOptions {
  size: BannerSize;
  style: BannerStyle;
  /** `#rrggbb` */
  textColor: string;
  /** `#rrggbb`: the player count (and the player bar, classic signal bars stay green). */
  accentColor: string;
  showFavicon: boolean;
  showMotd: boolean;
  showPing: boolean;
  borderRadius: number;
}

export const DEFAULT_BANNER_OPTIONS: Readonly<BannerOptions> = Object.freeze({
  size: 'normal',
  style: 'modern',
  textColor: '#ffffff',
  accentColor: '#10b981',
  showFavicon: true,
  showMotd: true,
  showPing: true,
  borderRadius: BORDER_RADIUS.default,
});

/** The default icon is drawn at this size, like a vanilla favicon. */
export const DEFAULT_ICON_SIZE = 64;

export type IconFormat = 'png' | 'webp';

export interface IconOptions {
  /** Side of the square image in pixels. */
  size: number;
  format: IconFormat;
  /** Rounded, transparent corners (the `/icon/sharp` look). */
  rounded: boolean;
}

/** Bounds of the icon endpoints' `size` (in the OpenAPI document). */
export const DYNAMIC_ICON_SIZE = { min: 16, max: 256, default: 80 } as const;
export const SHARP_ICON_SIZE = { min: 32, max: 512, default: 128 } as const;

/** Corner radius of rounded icons, as a fraction of the side. */
export const ROUNDED_ICON_RADIUS = 0.18;

export const MOTD_BANNER_WIDTH = 800;
export const MOTD_BANNER_HEIGHT = 180;
/** Spec "Limits": the `motd` parameter has at most 300 characters. */
export const MAX_MOTD_PARAMETER_LENGTH = 300;

export interface MotdBannerOptions {
  /** `#rrggbb`: colour of text without a colour code. */
  textColor: string;
  /** `#rrggbb`: tint of the background. */
  accentColor: string;
}
