/**
 * The render pool: images drawn in worker threads are the images the drawing code makes, a
 * thread starts with the first image and ends once idle, and a closed pool refuses work.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { badgeContent, renderBadgeSvg } from '../../src/render/badge.js';
import { badgeTextMeasure } from '../../src/render/badge-text.js';
import { DEFAULT_BANNER_OPTIONS } from '../../src/render/options.js';
import { renderBanner, renderMotdBanner } from '../../src/render/drawing.js';
import { RenderPool } from '../../src/render/pool.js';
import { decode, sampleStatus } from './support.js';

const pools: RenderPool[] = [];
function pool(options: ConstructorParameters<typeof RenderPool>[0] = { threads: 1 }): RenderPool {
  const made = new RenderPool(options);
  pools.push(made);
  return made;
}
afterEach(async () => {
  for (const made of pools.splice(0)) await made.close();
});

describe('RenderPool', () => {
  it('draws the same bytes in a worker as the drawing code draws in place', async () => {
    const renders = pool();
    const colours = { textColor: '#ffffff', accentColor: '#10b981' };
    expect(await renders.motdBanner('§aHello §lworld', colours)).toEqual(await renderMotdBanner('§aHello §lworld', colours));
    const status = sampleStatus();
    expect(await renders.banner(status, DEFAULT_BANNER_OPTIONS)).toEqual(await renderBanner(status, DEFAULT_BANNER_OPTIONS));
    const icon = await decode(await renders.icon(null, { size: 32, format: 'png', rounded: false }));
    expect([icon.width, icon.height]).toEqual([32, 32]);
    expect((await decode(await renders.defaultIconPng())).width).toBe(64);
  });

  it('draws badges with text measured in the worker', async () => {
    const content = badgeContent(sampleStatus(), { label: 'minecraft', style: 'flat', labelColor: '#555555', onlineColor: '#2e7d32', offlineColor: '#c62828' });
    expect(await pool().badgeSvg(content, 'flat')).toBe(renderBadgeSvg(content, 'flat', await badgeTextMeasure()));
  });

  it('starts a thread with the first image, runs at most `threads`, and ends them once idle', async () => {
    const renders = pool({ threads: 2, idleTimeoutMs: 200 });
    expect(renders.threads).toBe(0);
    await Promise.all(Array.from({ length: 6 }, (_, i) => renders.motdBanner(`text ${i}`, { textColor: '#ffffff', accentColor: '#000000' })));
    expect(renders.threads).toBeGreaterThan(0);
    expect(renders.threads).toBeLessThanOrEqual(2);
    await expect.poll(() => renders.threads, { timeout: 10_000 }).toBe(0);
    // A new image after the threads ended starts one again.
    expect((await renders.motdBanner('again', { textColor: '#ffffff', accentColor: '#000000' })).length).toBeGreaterThan(0);
  });

  it('started() resolves once a thread runs, starting one if none does', async () => {
    const renders = pool();
    expect(renders.threads).toBe(0);
    await Promise.all([renders.started(), renders.started()]);
    expect(renders.threads).toBe(1);
    await renders.started();
    expect(renders.threads).toBe(1);
  });

  it('refuses work once closed', async () => {
    const renders = pool();
    await renders.close();
    await expect(renders.motdBanner('late', { textColor: '#ffffff', accentColor: '#000000' })).rejects.toThrow(/closed/);
  });
});
