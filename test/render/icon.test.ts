import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { defaultIconPng, DEFAULT_ICON_SIZE } from '../../src/render/default-icon.js';
import { renderIcon, ROUNDED_ICON_RADIUS } from '../../src/render/icon.js';
import { compareWithReference, countColor, decode, differingFraction, pixelArtFavicon, pixelAt } from './support.js';

describe('renderIcon', () => {
  it.each([
    [16, 'png'],
    [80, 'png'],
    [256, 'png'],
    [16, 'webp'],
    [80, 'webp'],
    [256, 'webp'],
  ] as const)('draws a %i px %s from a favicon', async (size, format) => {
    const image = await decode(await renderIcon(await pixelArtFavicon(), { size, format, rounded: false }));
    expect(image.format).toBe(format);
    expect([image.width, image.height]).toEqual([size, size]);
  });

  it('enlarges with nearest-neighbour: every 4x4 block of a 64→256 icon is one source pixel', async () => {
    const favicon = await pixelArtFavicon();
    const image = await decode(await renderIcon(favicon, { size: 256, format: 'png', rounded: false }));
    // 8x8 source blocks become 32x32 blocks of exactly one colour: no smoothing at the seams.
    for (const [x, y] of [[31, 31], [32, 32], [63, 0], [64, 0], [255, 255], [128, 97]] as const) {
      const blockX = Math.floor(x / 32);
      const blockY = Math.floor(y / 32);
      const expected = pixelAt(image, blockX * 32, blockY * 32);
      expect(pixelAt(image, x, y)).toEqual(expected);
    }
    // Only the four colours of the source appear.
    const colours = new Set<string>();
    for (let i = 0; i < image.data.length; i += 4) colours.add(image.data.subarray(i, i + 4).toString('hex'));
    expect(colours.size).toBe(4);
  });

  it('shrinks with smoothing (a 16 px icon mixes the colours of the 8x8 blocks)', async () => {
    const image = await decode(await renderIcon(await pixelArtFavicon(64, 2), { size: 16, format: 'png', rounded: false }));
    expect(countColor(image, '#e11d48', undefined, 4)).toBeLessThan(16 * 16);
  });

  it('draws the default icon for no favicon, an invalid one and an undecodable one', async () => {
    const fallback = await decode(await renderIcon(null, { size: 64, format: 'png', rounded: false }));
    const source = await decode(await defaultIconPng());
    expect(differingFraction(fallback, source, 0)).toBe(0);
    const corrupt = Buffer.concat([Buffer.from((await pixelArtFavicon()).split(',')[1]!, 'base64').subarray(0, 40), Buffer.alloc(40)]);
    for (const favicon of ['data:image/gif;base64,R0lGOD', `data:image/png;base64,${corrupt.toString('base64')}`]) {
      const image = await decode(await renderIcon(favicon, { size: 64, format: 'png', rounded: false }));
      expect(differingFraction(image, source, 0)).toBe(0);
    }
  });

  it('centres a favicon that is not square on a transparent square', async () => {
    const png = await sharp({ create: { width: 64, height: 32, channels: 4, background: '#ff0000' } }).png().toBuffer();
    const image = await decode(await renderIcon(`data:image/png;base64,${png.toString('base64')}`, { size: 128, format: 'png', rounded: false }));
    expect(pixelAt(image, 64, 5)[3]).toBe(0);
    expect(pixelAt(image, 64, 64)).toEqual([255, 0, 0, 255]);
    expect(pixelAt(image, 64, 122)[3]).toBe(0);
  });

  it.each([32, 128, 512])('rounds the corners of a %i px sharp icon', async (size) => {
    const image = await decode(await renderIcon(await pixelArtFavicon(), { size, format: 'png', rounded: true }));
    expect(image.format).toBe('png');
    expect([image.width, image.height]).toEqual([size, size]);
    for (const [x, y] of [[0, 0], [size - 1, 0], [0, size - 1], [size - 1, size - 1]]) {
      expect(pixelAt(image, x!, y!)[3]).toBe(0);
    }
    const r = Math.round(size * ROUNDED_ICON_RADIUS);
    // Inside the radius on the diagonal it is (nearly) transparent; the edges' middles are opaque.
    expect(pixelAt(image, Math.floor(r * 0.2), Math.floor(r * 0.2))[3]).toBeLessThan(64);
    expect(pixelAt(image, size / 2, 0)[3]).toBe(255);
    expect(pixelAt(image, 0, size / 2)[3]).toBe(255);
    expect(pixelAt(image, size / 2, size / 2)[3]).toBe(255);
  });

  it('is pure: the same input gives the same bytes', async () => {
    const favicon = await pixelArtFavicon();
    const a = await renderIcon(favicon, { size: 100, format: 'webp', rounded: false });
    const b = await renderIcon(favicon, { size: 100, format: 'webp', rounded: false });
    expect(a.equals(b)).toBe(true);
  });
});

describe('default icon', () => {
  it('is a 64x64 PNG that matches its reference', async () => {
    const png = await defaultIconPng();
    const image = await decode(png);
    expect([image.format, image.width, image.height]).toEqual(['png', DEFAULT_ICON_SIZE, DEFAULT_ICON_SIZE]);
    expect(await compareWithReference('default-icon.png', png, 0)).toBe(0);
  });
});
