import { describe, expect, it } from 'vitest';
import { decodeStatusResponse, parseJavaStatus } from '../../src/protocol/java.js';
import { fixture } from '../protocol/fixtures.js';
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

  it('reads string style values as booleans and ignores other types', () => {
    expect(chatComponentToSegments({ text: 'x', bold: 'true', italic: 1 })).toEqual([seg('x', { bold: true })]);
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

  it('builds a Motd from segments, handing the segments out with hex colours', () => {
    expect(formatSegments([seg('x', { italic: true }), seg('', { bold: true }), seg('y', { color: 'gold' })])).toEqual({
      raw: '§ox§r§l§6y',
      clean: 'xy',
      html: '<span style="font-style: italic">x</span><span style="color: #ffaa00">y</span>',
      raw_lines: ['§ox§r§l§6y'],
      clean_lines: ['xy'],
      segments: [seg('x', { italic: true }), seg('y', { color: '#ffaa00' })],
    });
  });
});

describe('chat components as plugins send them (java-status-plugin-component.hex)', () => {
  // {"text":"A ","color":"gold","italic":"true","extra":[{"text":"B ","bold":"true"},
  //  {"text":"C ","italic":"false"},{"text":"D","color":"reset"}]}
  const description = decodeStatusResponse(fixture('java-status-plugin-component.hex')).description;

  it('reads string booleans as the vanilla client does, and color "reset" as the default colour', () => {
    expect(chatComponentToSegments(description)).toEqual([
      seg('A ', { color: 'gold', italic: true }),
      seg('B ', { color: 'gold', italic: true, bold: true }),
      seg('C ', { color: 'gold' }),
      seg('D', { italic: true }),
    ]);
  });

  it('shows them in every MOTD form', () => {
    const { motd } = parseJavaStatus(decodeStatusResponse(fixture('java-status-plugin-component.hex')));
    expect(motd.clean).toBe('A B C D');
    expect(motd.raw).toBe('§6§oA §lB §6C §r§oD');
    expect(motd.html).toContain('font-weight: bold');
  });

  it.each([
    ['TRUE', true],
    ['false', false],
    ['yes', false],
  ])('"bold": %j is %s', (value, bold) => {
    expect(chatComponentToSegments({ text: 'x', bold: value })[0]?.bold).toBe(bold);
  });
});
