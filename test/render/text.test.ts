import { createCanvas } from '@napi-rs/canvas';
import { beforeAll, describe, expect, it } from 'vitest';
import { formatMotd, PLAIN_STYLE, type MotdSegment } from '../../src/motd/index.js';
import { fontFor, registerRenderFonts } from '../../src/render/fonts.js';
import { motdLines, segmentsOfMotd, userMotdToSection } from '../../src/render/motd-text.js';
import { fitLine, measureLine, obfuscate, seededRandom } from '../../src/render/text.js';

const ctx = createCanvas(10, 10).getContext('2d');
const seg = (text: string, style: Partial<MotdSegment> = {}): MotdSegment => ({ ...PLAIN_STYLE, ...style, text });

beforeAll(() => registerRenderFonts());

describe('obfuscate', () => {
  it.each([16, 22, 33])('swaps each character for one of the same width at %i px', (px) => {
    for (const bold of [false, true]) {
      const font = fontFor('pixel', px, { bold });
      const text = 'Hello World, obfuscated 123!';
      const out = obfuscate(ctx, text, font, seededRandom(7));
      expect(out).not.toBe(text);
      expect([...out]).toHaveLength([...text].length);
      ctx.font = font;
      [...text].forEach((char, i) => {
        expect(ctx.measureText([...out][i]!).width).toBeCloseTo(ctx.measureText(char).width, 1);
      });
      expect(out.indexOf(' ')).toBe(text.indexOf(' '));
    }
  });

  it('is deterministic for a seed', () => {
    const font = fontFor('pixel', 16);
    expect(obfuscate(ctx, 'abcdef', font, seededRandom(1))).toBe(obfuscate(ctx, 'abcdef', font, seededRandom(1)));
  });
});

describe('fitLine', () => {
  const options = { kind: 'pixel' as const, px: 16 };
  it('keeps a line that fits', () => {
    const line = [seg('Short')];
    expect(fitLine(ctx, line, 500, options)).toEqual(line);
  });

  it('cuts a long line with an ellipsis in the style of the last kept segment', () => {
    const line = [seg('Red part ', { color: 'red' }), seg('and a long bold blue part that does not fit', { color: 'blue', bold: true })];
    const fitted = fitLine(ctx, line, 200, options);
    expect(measureLine(ctx, fitted, options)).toBeLessThanOrEqual(200);
    const last = fitted[fitted.length - 1]!;
    expect(last.text.endsWith('...')).toBe(true);
    expect(last.color).toBe('blue');
    expect(fitted[0]!.text).toBe('Red part ');
  });

  it('gives just the ellipsis when nothing fits', () => {
    const fitted = fitLine(ctx, [seg('WWWWWWWW')], 15, options);
    expect(fitted.map((s) => s.text).join('')).toBe('...');
  });
});

describe('MOTD text', () => {
  it('draws the MOTD module’s segments, exact hex colours included, never reading html back', () => {
    const motd = formatMotd({ text: 'A', color: '#123456', extra: [{ text: ' & <b>', bold: true, color: 'gold' }, { text: ' k', obfuscated: true }] });
    // An html that disagrees does not matter: nothing parses it.
    const segments = segmentsOfMotd({ ...motd, html: '<span style="color: #000000">other</span>' });
    expect(segments.map((s) => [s.text, s.color, s.bold, s.obfuscated])).toEqual([
      ['A', '#123456', false, false],
      [' & <b>', '#ffaa00', true, false],
      [' k', '#123456', false, true],
    ]);
  });

  it('draws BungeeCord §x hex colours of a string MOTD exactly', () => {
    const segments = segmentsOfMotd(formatMotd('§x§f§f§8§8§0§0Amber §aGreen'));
    expect(segments.map((s) => [s.text, s.color])).toEqual([
      ['Amber ', '#ff8800'],
      ['Green', '#55ff55'],
    ]);
  });

  it('falls back to raw for a status cached without segments', () => {
    const { segments: _dropped, ...motd } = formatMotd('§cRed');
    expect(segmentsOfMotd(motd)).toEqual([seg('Red', { color: 'red' })]);
  });

  it.each([
    ['&aGreen', '§aGreen'],
    ['&#AbCdEf', '§x§a§b§c§d§e§f'],
    ['§#010203', '§x§0§1§0§2§0§3'],
    ['Tom && Jerry', 'Tom && Jerry'],
    ['&zNot a code', '&zNot a code'],
  ])('userMotdToSection(%j) = %j', (input, expected) => {
    expect(userMotdToSection(input)).toBe(expected);
  });

  it('caps lines and characters before drawing', () => {
    const lines = motdLines([seg(`${'x'.repeat(1000)}\n`.repeat(20))], 2);
    expect(lines).toHaveLength(2);
    expect(lines[0]!.map((s) => s.text).join('')).toHaveLength(160);
  });
});
