/**
 * Favicon check for Java status responses. The server list shows a 64×64 PNG sent as
 * `"favicon": "data:image/png;base64,<data>"` (https://minecraft.wiki/w/Java_Edition_protocol/Server_List_Ping#Status_Response).
 * Anything else is dropped (the status itself still succeeds).
 */

const PREFIX = 'data:image/png;base64,';

/** Base64 characters of the largest favicon kept (≈ 384 KiB of PNG; a 64×64 icon is a few KiB). */
export const MAX_FAVICON_BASE64_LENGTH = 512 * 1024;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * Returns the favicon as a canonical `data:image/png;base64,…` URL when `value` is one
 * (valid base64 of a PNG, not larger than the cap), otherwise null. Line breaks inside the
 * base64 (sent by some older servers) are removed.
 */
export function acceptFavicon(value: unknown): string | null {
  if (typeof value !== 'string' || !value.startsWith(PREFIX)) return null;
  if (value.length > PREFIX.length + MAX_FAVICON_BASE64_LENGTH * 2) return null;
  const data = value.slice(PREFIX.length).replace(/[\r\n]/g, '');
  if (data.length === 0 || data.length > MAX_FAVICON_BASE64_LENGTH || data.length % 4 !== 0) return null;
  if (!BASE64.test(data)) return null;
  const head = Buffer.from(data.slice(0, 12), 'base64');
  if (head.length < PNG_SIGNATURE.length || !head.subarray(0, PNG_SIGNATURE.length).equals(PNG_SIGNATURE)) {
    return null;
  }
  return PREFIX + data;
}
