import { describe, expect, it } from 'vitest';
import {
  NAMED_COLORS,
  PLAIN_STYLE,
  chatComponentToSegments,
  colorToHex,
  formatSegments,
  nearestNamedColor,
  parseColor,
  parseFormattedText,
  segmentsToRaw,
  splitSegmentsIntoLines,
  type MotdSegment,
} from '../../src/motd/index.js';

const seg = (text: string, style: Partial<MotdSegment> = {}): MotdSegment => ({ ...PLAIN_STYLE, text, ...style });

describe('parseFormattedText', () => {
  it('yields segments with colour and every style', () => {
    expect(parseFormattedText('§6Gold §lbold§oitalic§nunder§mstrike§kobf§rplain')).toEqual([
      seg('Gold ', { color: 'gold' }),
      seg('bold', { color: 'gold', bold: true }),
      seg('italic', { color: 'gold', bold: true, italic: true }),
      seg('under', { color: 'gold', bold: true, italic: true, underlined: true }),
      seg('strike', { color: 'gold', bold: true, italic: true, underlined: true, strikethrough: true }),
      seg('obf', { color: 'gold', bold: true, italic: true, underlined: true, strikethrough: true, obfuscated: true }),
      seg('plain'),
    ]);
  });

  it('merges neighbours with the same style and skips empty runs', () => {
    expect(parseFormattedText('§a§aone§a two§l')).toEqual([seg('one two', { color: 'green' })]);
  });

  it('keeps a line break that follows a lone §', () => {
    expect(parseFormattedText('a§\nb')).toEqual([seg('a\nb')]);
  });
});

describe('chatComponentToSegments', () => {
  it('keeps exact hex colours for renderers', () => {
    expect(chatComponentToSegments({ text: 'hex', color: '#ABCDEF', underlined: true })).toEqual([
      seg('hex', { color: '#abcdef', underlined: true }),
    ]);
  });

  it('ignores style values that are not booleans', () => {
    expect(chatComponentToSegments({ text: 'x', bold: 'true', italic: 1 })).toEqual([seg('x')]);
  });
});

describe('splitSegmentsIntoLines', () => {
  it('splits on newlines and keeps styles on both sides', () => {
    const segments = parseFormattedText('§cred\nstill red§a green');
    expect(splitSegmentsIntoLines(segments)).toEqual([
      [seg('red', { color: 'red' })],
      [seg('still red', { color: 'red' }), seg(' green', { color: 'green' })],
    ]);
    expect(splitSegmentsIntoLines([])).toEqual([[]]);
  });
});

describe('colours', () => {
  it('has the 16 named colours with their codes', () => {
    expect(Object.keys(NAMED_COLORS)).toHaveLength(16);
    expect(NAMED_COLORS.gold).toEqual({ code: '6', hex: '#ffaa00' });
    expect(colorToHex('dark_purple')).toBe('#aa00aa');
    expect(colorToHex('#123456')).toBe('#123456');
  });

  it('accepts names and #rrggbb only', () => {
    expect(parseColor('GOLD')).toBe('gold');
    expect(parseColor('#FF00aa')).toBe('#ff00aa');
    for (const bad of ['#fff', 'rgb(1,2,3)', 'red;x', '#12345g', 'reset', 'bold', '', null, 5]) {
      expect(parseColor(bad)).toBeNull();
    }
  });

  it('finds the nearest named colour', () => {
    expect(nearestNamedColor('#fe0000')).toBe('dark_red');
    expect(nearestNamedColor('#010101')).toBe('black');
    expect(nearestNamedColor('#ffffff')).toBe('white');
    expect(nearestNamedColor('aqua')).toBe('aqua');
  });
});

describe('segmentsToRaw and formatSegments', () => {
  it('restates styles after a colour change and resets with §r', () => {
    const raw = segmentsToRaw([seg('a', { bold: true }), seg('b', { color: 'red', bold: true }), seg('c')]);
    expect(raw).toBe('§la§c§lb§rc');
    expect(parseFormattedText(raw)).toEqual([seg('a', { bold: true }), seg('b', { color: 'red', bold: true }), seg('c')]);
  });

  it('builds a Motd from segments', () => {
    expect(formatSegments([seg('x', { italic: true })])).toEqual({
      raw: '§ox',
      clean: 'x',
      html: '<span style="font-style: italic">x</span>',
      raw_lines: ['§ox'],
      clean_lines: ['x'],
    });
  });
});
