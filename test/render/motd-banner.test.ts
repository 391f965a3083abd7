import { describe, expect, it } from 'vitest';
import { MOTD_BANNER_HEIGHT, MOTD_BANNER_WIDTH, renderMotdBanner } from '../../src/render/motd-banner.js';
import { compareWithReference, countColor, decode, differingFraction, hexRgb } from './support.js';

const COLORS = { textColor: '#ffffff', accentColor: '#10b981' };
const render = async (text: string, colors = COLORS) => decode(await renderMotdBanner(text, colors));

describe('renderMotdBanner', () => {
  it('is an 800x180 PNG that matches its reference', async () => {
    const png = await renderMotdBanner('&6&lObserver &7» &aOnline &bstatus\\n&fBanners with &c&nunderline&r, &m strike &r&o italic &#ff77aahex', COLORS);
    const image = await decode(png);
    expect([image.format, image.width, image.height]).toEqual(['png', MOTD_BANNER_WIDTH, MOTD_BANNER_HEIGHT]);
    expect(await compareWithReference('motd-banner.png', png)).toBeLessThanOrEqual(0.005);
  });

  // Each of the 16 colour codes, in both spellings, draws its colour.
  it.each([
    ['0', '#000000'], ['1', '#0000aa'], ['2', '#00aa00'], ['3', '#00aaaa'],
    ['4', '#aa0000'], ['5', '#aa00aa'], ['6', '#ffaa00'], ['7', '#aaaaaa'],
    ['8', '#555555'], ['9', '#5555ff'], ['a', '#55ff55'], ['b', '#55ffff'],
    ['c', '#ff5555'], ['d', '#ff55ff'], ['e', '#ffff55'], ['f', '#ffffff'],
  ])('§%s and &%s draw %s', async (code, hex) => {
    // Grey-ish text colour so that §f white is not the default colour.
    const colors = { textColor: '#336699', accentColor: '#10b981' };
    for (const text of [`§${code}MMMM MMMM`, `&${code}MMMM MMMM`]) {
      const image = await render(text, colors);
      expect(countColor(image, hex, undefined, 2)).toBeGreaterThan(200);
    }
  });

  it.each([
    ['&#ff00ff', '#ff00ff'],
    ['§#12ab34', '#12ab34'],
    ['&x&f&f&8&8&0&0', '#ff8800'],
  ])('hex colour %s draws %s', async (prefix, hex) => {
    expect(countColor(await render(`${prefix}Hex colours`), hex, undefined, 2)).toBeGreaterThan(200);
  });

  it('draws text without codes in textColor, with the accent tinting the background', async () => {
    const image = await render('Plain text', { textColor: '#ff8800', accentColor: '#3366ff' });
    expect(countColor(image, '#ff8800', undefined, 2)).toBeGreaterThan(200);
    // The accent rule along the bottom edge.
    expect(countColor(image, '#3366ff', { x: 0, y: MOTD_BANNER_HEIGHT - 4, width: MOTD_BANNER_WIDTH, height: 4 }, 0)).toBe(4 * MOTD_BANNER_WIDTH);
  });

  it.each([
    ['bold', '&lBold text here'],
    ['italic', '&oBold text here'],
    ['underline', '&nBold text here'],
    ['strikethrough', '&mBold text here'],
    ['obfuscated', '&kBold text here'],
  ])('%s changes the pixels', async (_name, text) => {
    const plain = await render('Bold text here');
    const styled = await render(text);
    expect(differingFraction(plain, styled)).toBeGreaterThan(0.002);
  });

  it('underline and strikethrough draw solid rules in the text colour', async () => {
    const [r, g, b] = hexRgb('#ff5555');
    const rows = async (text: string) => {
      const image = await render(text);
      // Rows with a long run of the exact colour: only a rule has one.
      let found = 0;
      for (let y = 0; y < image.height; y++) {
        let run = 0;
        let best = 0;
        for (let x = 0; x < image.width; x++) {
          const i = (y * image.width + x) * 4;
          run = image.data[i] === r && image.data[i + 1] === g && image.data[i + 2] === b ? run + 1 : 0;
          best = Math.max(best, run);
        }
        if (best > 100) found++;
      }
      return found;
    };
    expect(await rows('&cUnderlined words')).toBe(0);
    expect(await rows('&c&nUnderlined words')).toBeGreaterThan(0);
    expect(await rows('&c&mUnderlined words')).toBeGreaterThan(0);
  });

  it('draws characters the pixel font lacks with the fallback font', async () => {
    const latin = await render('&fAAAA');
    const greek = await render('&fΩΩΩΩ λ');
    expect(countColor(greek, '#ffffff', undefined, 2)).toBeGreaterThan(100);
    expect(differingFraction(latin, greek)).toBeGreaterThan(0.001);
  });

  it('accepts a literal \\n as a line break and keeps at most four lines', async () => {
    const one = await render('Line one');
    const two = await render('Line one\\nLine two');
    const real = await render('Line one\nLine two');
    expect(differingFraction(one, two)).toBeGreaterThan(0.005);
    expect(differingFraction(two, real)).toBe(0);
    const many = await decode(await renderMotdBanner(Array.from({ length: 50 }, (_, i) => `L${i}`).join('\n'), COLORS));
    expect([many.width, many.height]).toEqual([800, 180]);
  });

  it('is pure, obfuscated text included', async () => {
    const a = await renderMotdBanner('&kSecret&r visible', COLORS);
    const b = await renderMotdBanner('&kSecret&r visible', COLORS);
    expect(a.equals(b)).toBe(true);
  });
});
