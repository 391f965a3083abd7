import { describe, expect, it } from 'vitest';
import { serverAddress } from '../../src/store/index.js';
import { formatMotd } from '../../src/motd/index.js';
import {
  BANNER_SIZES,
  bannerLayout,
  bannerTitle,
  DEFAULT_BANNER_OPTIONS,
  renderBanner,
  type BannerOptions,
  type BannerSize,
  type BannerStyle,
} from '../../src/render/banner.js';
import {
  compareWithReference,
  countColor,
  decode,
  differingFraction,
  differingIn,
  offlineStatus,
  pixelArtFavicon,
  pixelAt,
  sampleStatus,
} from './support.js';

const SIZES = Object.keys(BANNER_SIZES) as BannerSize[];
const STYLES: BannerStyle[] = ['modern', 'classic'];
const CASES = STYLES.flatMap((style) => SIZES.map((size) => [style, size] as const));

function options(overrides: Partial<BannerOptions> = {}): BannerOptions {
  return { ...DEFAULT_BANNER_OPTIONS, ...overrides };
}

/** Reference images may differ in at most this share of pixels (font rasterisation noise). */
const REFERENCE_TOLERANCE = 0.005;

describe('renderBanner', () => {
  it.each(CASES)('%s %s: a PNG of the size of the spec that matches its reference', async (style, size) => {
    const favicon = await pixelArtFavicon();
    const png = await renderBanner(sampleStatus({ favicon }), options({ style, size }));
    const image = await decode(png);
    expect(image.format).toBe('png');
    expect([image.width, image.height]).toEqual([BANNER_SIZES[size].width, BANNER_SIZES[size].height]);
    expect(await compareWithReference(`banner-${style}-${size}.png`, png)).toBeLessThanOrEqual(REFERENCE_TOLERANCE);
  });

  it.each(CASES)('%s %s offline: matches its reference and draws no player count', async (style, size) => {
    const png = await renderBanner(offlineStatus(), options({ style, size }));
    const image = await decode(png);
    expect([image.width, image.height]).toEqual([BANNER_SIZES[size].width, BANNER_SIZES[size].height]);
    expect(bannerLayout(options({ style, size }), false).players).toBeNull();
    // The "Server offline" line is drawn in red.
    expect(countColor(image, '#ff6b6b', undefined, 24)).toBeGreaterThan(20);
    expect(await compareWithReference(`banner-${style}-${size}-offline.png`, png)).toBeLessThanOrEqual(REFERENCE_TOLERANCE);
  });

  it.each(CASES)('%s %s: the player count is drawn in the accent colour', async (style, size) => {
    const accent = '#ff00ff';
    const layout = bannerLayout(options({ style, size }), true);
    const withAccent = await decode(await renderBanner(sampleStatus(), options({ style, size, accentColor: accent })));
    const withDefault = await decode(await renderBanner(sampleStatus(), options({ style, size })));
    expect(countColor(withAccent, accent, layout.players!)).toBeGreaterThan(30);
    expect(countColor(withDefault, accent, layout.players!)).toBe(0);
    expect(countColor(withDefault, DEFAULT_BANNER_OPTIONS.accentColor, layout.players!)).toBeGreaterThan(30);
  });

  it.each(STYLES)('%s: the text colour is the colour of the title', async (style) => {
    const layout = bannerLayout(options({ style }), true);
    const image = await decode(await renderBanner(sampleStatus(), options({ style, textColor: '#00ffff' })));
    expect(countColor(image, '#00ffff', layout.title)).toBeGreaterThan(30);
    const white = await decode(await renderBanner(sampleStatus(), options({ style })));
    expect(countColor(white, '#00ffff', layout.title)).toBe(0);
  });

  describe.each(STYLES)('%s toggles', (style) => {
    const base = options({ style });
    const layout = bannerLayout(base, true);

    it('showFavicon=false removes the icon and moves the text', async () => {
      const favicon = await pixelArtFavicon();
      const on = await decode(await renderBanner(sampleStatus({ favicon }), base));
      const off = await decode(await renderBanner(sampleStatus({ favicon }), { ...base, showFavicon: false }));
      expect(countColor(on, '#e11d48', layout.favicon!)).toBeGreaterThan(500);
      expect(countColor(off, '#e11d48', layout.favicon!)).toBe(0);
      expect(bannerLayout({ ...base, showFavicon: false }, true).textX).toBeLessThan(layout.textX);
    });

    it('showMotd=false leaves the MOTD out', async () => {
      const on = await decode(await renderBanner(sampleStatus(), base));
      const off = await decode(await renderBanner(sampleStatus(), { ...base, showMotd: false }));
      // §6 gold is only in the MOTD.
      expect(countColor(on, '#ffaa00', layout.motd!)).toBeGreaterThan(50);
      expect(countColor(off, '#ffaa00')).toBe(0);
    });

    it('showPing=false leaves the latency out', async () => {
      const on = await decode(await renderBanner(sampleStatus(), base));
      const off = await decode(await renderBanner(sampleStatus(), { ...base, showPing: false }));
      const top = { x: layout.textX, y: 0, width: layout.width - layout.textX, height: layout.badge.y + layout.badge.height + 4 };
      expect(differingIn(on, off, top)).toBeGreaterThan(0.002);
      const rest = { x: 0, y: layout.badge.y + layout.badge.height + 6, width: layout.width, height: layout.height - layout.badge.y - layout.badge.height - 6 };
      expect(differingIn(on, off, rest)).toBe(0);
    });
  });

  it.each(STYLES)('%s: borderRadius 0 gives square corners, more gives transparent ones', async (style) => {
    const square = await decode(await renderBanner(sampleStatus(), options({ style, borderRadius: 0 })));
    const round = await decode(await renderBanner(sampleStatus(), options({ style, borderRadius: 0.5 })));
    const rounder = await decode(await renderBanner(sampleStatus(), options({ style, borderRadius: 4 })));
    const { width, height } = BANNER_SIZES.normal;
    for (const [x, y] of [[0, 0], [width - 1, 0], [0, height - 1], [width - 1, height - 1]] as const) {
      expect(pixelAt(square, x, y)[3]).toBe(255);
      expect(pixelAt(round, x, y)[3]).toBe(0);
    }
    expect(pixelAt(round, 6, 6)[3]).toBe(255);
    expect(pixelAt(rounder, 6, 6)[3]).toBe(0);
  });

  it('draws exact hex colours of chat-component MOTDs', async () => {
    const motd = formatMotd({ text: '', extra: [{ text: 'Hex coloured MOTD', color: '#ff00ff', bold: true }] });
    const layout = bannerLayout(options(), true);
    const image = await decode(await renderBanner(sampleStatus({ motd }), options()));
    expect(countColor(image, '#ff00ff', layout.motd!)).toBeGreaterThan(50);
  });

  it('is pure, obfuscated text included, and obfuscation changes glyphs, not layout', async () => {
    const motd = formatMotd('§kSecret words here§r visible');
    const a = await renderBanner(sampleStatus({ motd }), options());
    const b = await renderBanner(sampleStatus({ motd }), options());
    expect(a.equals(b)).toBe(true);
    const plain = await decode(await renderBanner(sampleStatus({ motd: formatMotd('Secret words here visible') }), options()));
    const obfuscated = await decode(a);
    const layout = bannerLayout(options(), true);
    expect(differingIn(plain, obfuscated, layout.motd!)).toBeGreaterThan(0.005);
  });

  it('survives hostile server text: long names, many long MOTD lines, huge counts', async () => {
    const status = sampleStatus({
      query: { host: `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.net`, port: 1, legacy: false, bedrock: false },
      motd: formatMotd(`${'§k§lW'.repeat(5000)}\n`.repeat(200)),
      version: { name: '§4x'.repeat(10_000), protocol: 1 },
      players: { online: Number.MAX_SAFE_INTEGER, max: -5, sample: [] },
      roundTripLatency: 1e12,
    });
    for (const style of STYLES) {
      const image = await decode(await renderBanner(status, options({ style, size: 'large' })));
      expect([image.width, image.height]).toEqual([800, 240]);
    }
  });

  it('differs between styles and between online and offline', async () => {
    const modern = await decode(await renderBanner(sampleStatus(), options()));
    const classic = await decode(await renderBanner(sampleStatus(), options({ style: 'classic' })));
    const offline = await decode(await renderBanner(offlineStatus(), options()));
    expect(differingFraction(modern, classic)).toBeGreaterThan(0.1);
    expect(differingFraction(modern, offline)).toBeGreaterThan(0.05);
  });
});

describe('bannerTitle', () => {
  it.each([
    [{ host: 'play.example.net', port: 25565, bedrock: false }, 'play.example.net'],
    [{ host: 'play.example.net', port: 25566, bedrock: false }, 'play.example.net:25566'],
    [{ host: 'pe.example.net', port: 19132, bedrock: true }, 'pe.example.net'],
    [{ host: 'pe.example.net', port: 25565, bedrock: true }, 'pe.example.net:25565'],
    [{ host: '2001:db8::1', port: 25565, bedrock: false }, '2001:db8::1'],
    [{ host: '2001:db8::1', port: 25570, bedrock: false }, '[2001:db8::1]:25570'],
  ])('%j → %s', (query, expected) => {
    expect(bannerTitle(sampleStatus({ query: { ...query, legacy: false } }))).toBe(expected);
    // The same text as the address /trends lists for that server.
    expect(serverAddress(query.bedrock ? 'bedrock' : 'java', query.host, query.port)).toBe(expected);
  });
});
