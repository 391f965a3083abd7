import { describe, expect, it } from 'vitest';
import { BADGE_DEFAULTS } from '../../src/render/badge-options.js';
import { badgeContent, badgeTitle, escapeXml, renderBadgeSvg, shieldsEndpoint, type TextMeasure } from '../../src/render/badge.js';
import { badgeTextMeasure } from '../../src/render/badge-text.js';
import { offlineStatus, sampleStatus } from './support.js';

const options = { ...BADGE_DEFAULTS, label: 'minecraft' };
/** Six pixels a character: widths that are easy to check by hand. */
const sixPerCharacter: TextMeasure = (text) => 6 * [...text].length;

describe('badgeContent', () => {
  it.each([
    ['online with players', sampleStatus({ players: { online: 12, max: 100, sample: [] } }), '12/100 online', BADGE_DEFAULTS.onlineColor],
    ['online without a player count', sampleStatus({ players: null }), 'online', BADGE_DEFAULTS.onlineColor],
    ['offline', offlineStatus(), 'offline', BADGE_DEFAULTS.offlineColor],
  ])('%s', (_name, status, message, color) => {
    const content = badgeContent(status, options);
    expect(content).toMatchObject({ label: 'minecraft', message, messageColor: color, labelColor: BADGE_DEFAULTS.labelColor });
    expect(badgeTitle(content)).toBe(`minecraft: ${message}`);
    expect(badgeTitle({ ...content, label: '' })).toBe(message);
  });
});

describe('escapeXml', () => {
  it.each([
    ['a & b', 'a &amp; b'],
    ['<tag attr="x">', '&lt;tag attr=&quot;x&quot;&gt;'],
    ["it's", 'it&apos;s'],
    ['bell\u0007 and nul\u0000', 'bell\ufffd and nul\ufffd'],
    ['tab\tkept', 'tab\tkept'],
    ['lone \ud800 surrogate', 'lone \ufffd surrogate'],
    ['pair 😀 kept', 'pair 😀 kept'],
    ['\ufffe\uffff', '\ufffd\ufffd'],
  ])('%j', (input, output) => expect(escapeXml(input)).toBe(output));
});

describe('renderBadgeSvg', () => {
  const content = badgeContent(sampleStatus({ players: { online: 3, max: 20, sample: [] } }), options);

  it.each([
    // 6 px padding each side; `minecraft` 54 px, `3/20 online` 66 px.
    ['flat', 20, 66 + 78],
    ['flat-square', 20, 66 + 78],
    // 10 px padding each side and 1.2 px between characters, rounded up per part.
    ['for-the-badge', 28, 20 + Math.ceil(54 + 8 * 1.2) + 20 + Math.ceil(66 + 10 * 1.2)],
  ] as const)('%s: %i px high, as wide as its measured texts and their padding', (style, height, width) => {
    const svg = renderBadgeSvg(content, style, sixPerCharacter);
    expect(svg).toContain(`width="${width}" height="${height}" viewBox="0 0 ${width} ${height}"`);
  });

  it('gives every text its measured width as textLength', () => {
    const svg = renderBadgeSvg(content, 'flat-square', sixPerCharacter);
    expect([...svg.matchAll(/textLength="([\d.]+)"/g)].map((m) => Number(m[1]))).toEqual([54, 66]);
  });

  it('leaves the label out when it is empty', () => {
    const svg = renderBadgeSvg({ ...content, label: '' }, 'flat-square', sixPerCharacter);
    expect(svg).toContain('width="78"');
    expect(svg).not.toContain('>minecraft<');
  });

  it('measures with the bundled font: wide letters are wider than narrow ones', async () => {
    const measure = await badgeTextMeasure();
    expect(measure('WWWW', { size: 11, weight: 400 })).toBeGreaterThan(2 * measure('iiii', { size: 11, weight: 400 }));
    expect(measure('online', { size: 10, weight: 700 })).toBeGreaterThan(measure('online', { size: 10, weight: 400 }));
  });
});

describe('shieldsEndpoint', () => {
  it.each([
    [60, 300],
    [300, 300],
    [900, 900],
  ])('a status kept %i s is kept %i s by shields.io', (ttl, cacheSeconds) => {
    const body = shieldsEndpoint(badgeContent(offlineStatus(), options), 'flat', ttl);
    expect(body).toEqual({
      schemaVersion: 1,
      label: 'minecraft',
      message: 'offline',
      color: BADGE_DEFAULTS.offlineColor,
      labelColor: BADGE_DEFAULTS.labelColor,
      isError: true,
      style: 'flat',
      cacheSeconds,
    });
  });
});
