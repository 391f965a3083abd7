import { describe, expect, it } from 'vitest';
import { luminance, mixColors, parseHexColor, shadowOf } from '../../src/render/color.js';
import { parseHexColor as widgetParseHexColor } from '../../src/render/widget/index.js';

describe('parseHexColor', () => {
  it.each([
    ['#FFFFFF', '#ffffff'],
    ['FFFFFF', '#ffffff'],
    ['#10B981', '#10b981'],
    ['10b981', '#10b981'],
    ['#abc', '#aabbcc'],
    ['ABC', '#aabbcc'],
  ])('%j → %j', (input, expected) => {
    expect(parseHexColor(input)).toBe(expected);
  });

  it.each(['', '#', '#ab', '#abcd', '#abcde', '#abcdefa', 'red', '#ggg', 'rgb(0,0,0)', '##fff', '#fff;x', '0x123456', ' #0f0 '])(
    '%j is refused',
    (input) => {
      expect(parseHexColor(input)).toBeNull();
    },
  );
});

describe('colour arithmetic', () => {
  it('mixes and shadows like the Minecraft client', () => {
    expect(mixColors('#000000', '#ffffff', 0.5)).toBe('#808080');
    expect(mixColors('#10b981', '#10b981', 0.3)).toBe('#10b981');
    // The client draws shadows at a quarter of the brightness: §f (255) → 63.
    expect(shadowOf('#ffffff')).toBe('#3f3f3f');
    expect(shadowOf('#ffaa00')).toBe('#3f2a00');
  });
});

describe('one home per colour helper', () => {
  it('the widget parses colours with the image endpoints’ parser, as strictly', () => {
    expect(widgetParseHexColor).toBe(parseHexColor);
  });

  it('luminance is WCAG relative luminance', () => {
    expect(luminance('#000000')).toBe(0);
    expect(luminance('#ffffff')).toBeCloseTo(1, 10);
    expect(luminance('#808080')).toBeCloseTo(0.2158605, 6);
  });
});
