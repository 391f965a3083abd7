import { describe, expect, it } from 'vitest';
import { etagOf, matchesIfNoneMatch, RenderCache } from '../../src/render/cache.js';

describe('RenderCache', () => {
  it('keeps an image from its second request on, and serves the cached bytes after', async () => {
    const cache = new RenderCache();
    let renders = 0;
    const render = async () => {
      renders += 1;
      return Buffer.from('image');
    };
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await cache.getOrRender('k', 'image/png', render));
    expect(renders).toBe(2);
    expect(results.map((r) => r.hit)).toEqual([false, false, true, true]);
    expect(results[3]!.image).toEqual({ body: Buffer.from('image'), contentType: 'image/png', etag: etagOf('k') });
  });

  it('one-off images never push out an image asked for again', async () => {
    const cache = new RenderCache({ maxBytes: 10_000, maxEntryBytes: 5_000, seenKeys: 100 });
    const body = () => Promise.resolve(Buffer.alloc(3_000));
    await cache.getOrRender('popular', 'image/png', body);
    await cache.getOrRender('popular', 'image/png', body);
    // A flood of new keys, each asked for once: three of them would fill the cache.
    for (let i = 0; i < 1_000; i++) await cache.getOrRender(`one-off-${i}`, 'image/png', body);
    expect((await cache.getOrRender('popular', 'image/png', body)).hit).toBe(true);
  });

  it('shares one render between concurrent requests for a key', async () => {
    const cache = new RenderCache();
    let renders = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const render = async () => {
      renders += 1;
      await gate;
      return Buffer.from('x');
    };
    const all = Promise.all([1, 2, 3].map(() => cache.getOrRender('k', 'image/png', render)));
    release();
    const results = await all;
    expect(renders).toBe(1);
    expect(new Set(results.map((r) => r.image.body)).size).toBe(1);
  });

  it('does not cache a failed render', async () => {
    const cache = new RenderCache();
    await expect(cache.getOrRender('k', 'image/png', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    const retry = await cache.getOrRender('k', 'image/png', async () => Buffer.from('ok'));
    expect(retry.hit).toBe(false);
    expect(retry.image.body.toString()).toBe('ok');
  });

  it('is bounded by bytes, evicting the least recently used image', async () => {
    const cache = new RenderCache({ maxBytes: 10_000, maxEntryBytes: 5_000 });
    const body = () => Promise.resolve(Buffer.alloc(3_000));
    // Each asked for twice, so that it is kept.
    const twice = async (key: string) => {
      await cache.getOrRender(key, 'image/png', body);
      await cache.getOrRender(key, 'image/png', body);
    };
    await twice('a');
    await twice('b');
    await cache.getOrRender('a', 'image/png', body); // a is now the most recent
    await twice('c');
    await twice('d');
    // What is still kept comes back without a render (hit); what was evicted is rendered again.
    const kept = async (key: string) => (await cache.getOrRender(key, 'image/png', body)).hit;
    expect(await kept('d')).toBe(true);
    expect(await kept('a')).toBe(true);
    expect(await kept('b')).toBe(false);
    // Larger than one entry may be: served, not kept.
    await cache.getOrRender('big', 'image/png', () => Promise.resolve(Buffer.alloc(6_000)));
    const big = await cache.getOrRender('big', 'image/png', () => Promise.resolve(Buffer.alloc(6_000)));
    expect(big.image.body.length).toBe(6_000);
    expect((await cache.getOrRender('big', 'image/png', () => Promise.resolve(Buffer.alloc(6_000)))).hit).toBe(false);
  });
});

describe('ETags', () => {
  it('are strong, quoted and differ by key', () => {
    expect(etagOf('a')).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(etagOf('a')).toBe(etagOf('a'));
    expect(etagOf('a')).not.toBe(etagOf('b'));
  });

  const tag = etagOf('a');
  it.each([
    [undefined, false],
    ['', false],
    [tag, true],
    [`W/${tag}`, true],
    [`"other", ${tag}`, true],
    ['"other"', false],
    ['*', true],
    [tag.slice(1, -1), false],
  ])('If-None-Match %j matches: %s', (header, expected) => {
    expect(matchesIfNoneMatch(header, tag)).toBe(expected);
  });
});
