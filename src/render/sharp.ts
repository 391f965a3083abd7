/**
 * sharp as the renderers use it. libvips' operation cache keeps the results of recent
 * operations for reuse; every image here starts from a new buffer, so it would only hold
 * memory. One libvips thread per image: requests already run side by side on libuv's pool,
 * and the images are small (docs/performance.md#memory).
 */
import sharp from 'sharp';

sharp.cache(false);
sharp.concurrency(1);

export default sharp;
