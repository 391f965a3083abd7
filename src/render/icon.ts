/**
 * Square server icons (`/icon/dynamic`, `/icon/sharp`): the server's favicon, or Observer's
 * default icon, resized with sharp. Enlarging uses nearest-neighbour so pixel art stays crisp;
 * shrinking uses Lanczos. A favicon that is not square is centred on a transparent square.
 */
import { ROUNDED_ICON_RADIUS, type IconOptions } from './options.js';
import sharp from './sharp.js';
import { defaultIconPng, DEFAULT_ICON_SIZE } from './default-icon.js';
import { decodeFavicon, MAX_FAVICON_SIDE, type Favicon } from './favicon.js';

export { DYNAMIC_ICON_SIZE, ROUNDED_ICON_RADIUS, SHARP_ICON_SIZE, type IconFormat, type IconOptions } from './options.js';

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
