import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { acceptFavicon, MAX_FAVICON_BASE64_LENGTH } from '../../src/protocol/favicon.js';
import { decodeFavicon, MAX_FAVICON_DATA_URL_LENGTH } from '../../src/render/favicon.js';
import { validFavicon } from '../../src/render/widget/view.js';

async function pngDataUrl(width: number, height: number): Promise<string> {
  const png = await sharp({ create: { width, height, channels: 4, background: '#336699' } }).png().toBuffer();
  return `data:image/png;base64,${png.toString('base64')}`;
}

describe('decodeFavicon', () => {
  it('returns the PNG and its size from the IHDR header', async () => {
    const decoded = decodeFavicon(await pngDataUrl(64, 64));
    expect(decoded).not.toBeNull();
    expect(decoded!.width).toBe(64);
    expect(decoded!.height).toBe(64);
    expect((await sharp(decoded!.png).metadata()).format).toBe('png');
  });

  it('accepts other sizes up to 1024 and refuses bigger ones', async () => {
    expect(decodeFavicon(await pngDataUrl(32, 48))).toMatchObject({ width: 32, height: 48 });
    expect(decodeFavicon(await pngDataUrl(1024, 1))).not.toBeNull();
    expect(decodeFavicon(await pngDataUrl(1025, 1))).toBeNull();
  });

  it.each([
    ['null', null],
    ['empty', ''],
    ['a JPEG data URL', 'data:image/jpeg;base64,/9j/4AAQ'],
    ['no data URL', 'iVBORw0KGgo='],
    ['invalid base64', 'data:image/png;base64,@@@@'],
    ['not a PNG', `data:image/png;base64,${Buffer.from('GIF89a'.padEnd(40, 'x')).toString('base64')}`],
    ['a truncated PNG', 'data:image/png;base64,iVBORw0KGgo='],
    ['too long', `data:image/png;base64,${'A'.repeat(MAX_FAVICON_DATA_URL_LENGTH)}`],
  ])('refuses %s', (_name, input) => {
    expect(decodeFavicon(input)).toBeNull();
  });

  it('refuses a header that claims a zero width', () => {
    const header = Buffer.alloc(33);
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(header, 0);
    header.writeUInt32BE(13, 8);
    header.write('IHDR', 12, 'latin1');
    header.writeUInt32BE(0, 16);
    header.writeUInt32BE(64, 20);
    expect(decodeFavicon(`data:image/png;base64,${header.toString('base64')}`)).toBeNull();
  });
});

describe('one favicon check for protocol, images and widget', () => {
  /** A real PNG padded (with a trailing chunk-free tail of zero bytes) to `base64Length` base64 characters. */
  async function paddedFavicon(base64Length: number): Promise<string> {
    const png = await sharp({ create: { width: 16, height: 16, channels: 4, background: '#336699' } }).png().toBuffer();
    const bytes = Buffer.concat([png, Buffer.alloc((base64Length / 4) * 3 - png.length)]);
    return `data:image/png;base64,${bytes.toString('base64')}`;
  }

  it('what the protocol keeps, the renderer draws and the widget inlines; one byte over the cap, none of them', async () => {
    const atCap = await paddedFavicon(MAX_FAVICON_BASE64_LENGTH);
    const overCap = await paddedFavicon(MAX_FAVICON_BASE64_LENGTH + 4);
    expect(acceptFavicon(atCap)).toBe(atCap);
    expect(decodeFavicon(atCap)).toMatchObject({ width: 16, height: 16 });
    expect(validFavicon(atCap)).toBe(atCap);
    expect(acceptFavicon(overCap)).toBeNull();
    expect(decodeFavicon(overCap)).toBeNull();
    expect(validFavicon(overCap)).toBeNull();
  });
});
