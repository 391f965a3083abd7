/**
 * A server's favicon, checked before any decoder sees it: the protocol's one favicon check
 * (`acceptFavicon`: data URL form, base64, PNG signature, size cap), then the size in the IHDR
 * header (http://www.libpng.org/pub/png/spec/1.2/PNG-Chunks.html#C.IHDR).
 */
import { acceptFavicon, MAX_FAVICON_BASE64_LENGTH } from '../protocol/favicon.js';

const PREFIX = 'data:image/png;base64,';
/** The longest favicon data URL drawn: the protocol's cap, so a status favicon is never refused here. */
export const MAX_FAVICON_DATA_URL_LENGTH = PREFIX.length + MAX_FAVICON_BASE64_LENGTH;
/** Largest favicon side decoded (64 is the vanilla size; some servers send bigger art). */
export const MAX_FAVICON_SIDE = 1024;

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export interface Favicon {
  png: Buffer;
  width: number;
  height: number;
}

/** The PNG inside a favicon data URL, or null for anything else or anything too large. */
export function decodeFavicon(dataUrl: string | null | undefined): Favicon | null {
  const accepted = acceptFavicon(dataUrl);
  if (accepted === null) return null;
  const png = Buffer.from(accepted.slice(PREFIX.length), 'base64');
  // Signature (8) + IHDR length (4) + "IHDR" (4) + width (4) + height (4).
  if (png.length < 33 || !png.subarray(0, 8).equals(PNG_SIGNATURE)) return null;
  if (png.toString('latin1', 12, 16) !== 'IHDR') return null;
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  if (width < 1 || height < 1 || width > MAX_FAVICON_SIDE || height > MAX_FAVICON_SIDE) return null;
  return { png, width, height };
}
