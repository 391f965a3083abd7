/**
 * Square server icons (`/icon/dynamic`, `/icon/sharp`): the server's favicon, or Observer's
 * default icon, resized with sharp. Enlarging uses nearest-neighbour so pixel art stays crisp;
 * shrinking uses Lanczos. A favicon that is not square is centred on a transparent square.
 */
import sharp from 'sharp';
import { defaultIconPng, DEFAULT_ICON_SIZE } from './default-icon.js';
import { decodeFavicon, MAX_FAVICON_SIDE, type Favicon } from './favicon.js';

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

const TRANSPARENT = { r: 0, g: 0, b: 0, alpha: 0 };

function roundedMask(size: number): Buffer {
  const r = Math.round(size * ROUNDED_ICON_RADIUS);
  return Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}">` +
      `<rect width="${size}" height="${size}" rx="${r}" ry="${r}" fill="#fff"/></svg>`,
  );
}

async function resizeIcon(source: Favicon, options: IconOptions): Promise<Buffer> {
  const enlarging = options.size >= Math.max(source.width, source.height);
  let image = sharp(source.png, { limitInputPixels: MAX_FAVICON_SIDE * MAX_FAVICON_SIDE, failOn: 'error' })
    .ensureAlpha()
    .resize(options.size, options.size, {
      fit: 'contain',
      background: TRANSPARENT,
      kernel: enlarging ? 'nearest' : 'lanczos3',
    });
  // sharp composites after resizing, so the mask is cut at the final size.
  if (options.rounded) image = image.composite([{ input: roundedMask(options.size), blend: 'dest-in' }]);
  return options.format === 'webp'
    ? image.webp({ lossless: true, effort: 4 }).toBuffer()
    : image.png({ compressionLevel: 6, adaptiveFiltering: false }).toBuffer();
}

/**
 * The icon of a favicon data URL (`ServerStatus.favicon`), or of the default icon when it is
 * null, invalid or cannot be decoded. Pure: the same inputs give the same bytes.
 */
export async function renderIcon(favicon: string | null, options: IconOptions): Promise<Buffer> {
  const decoded = decodeFavicon(favicon);
  if (decoded) {
    try {
      return await resizeIcon(decoded, options);
    } catch {
      // A PNG header that lied about its content: fall through to the default icon.
    }
  }
  const png = await defaultIconPng();
  return resizeIcon({ png, width: DEFAULT_ICON_SIZE, height: DEFAULT_ICON_SIZE }, options);
}
