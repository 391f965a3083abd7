/**
 * A byte-bounded cache of rendered images, keyed by everything an image depends on (the
 * caller builds the key: status `server_id` + `checked_at`, or the favicon's digest, plus the
 * parameters). Concurrent requests for the same key share one render.
 *
 * The ETag is derived from the key, not from the bytes: renders are pure, so equal keys mean
 * equal images, and a conditional request can be answered 304 without rendering anything.
 * RENDER_VERSION is part of every ETag so that a change in the drawing code changes them.
 *
 * An image is kept only once its key has been asked for a second time (the keys seen once are
 * remembered, bounded): a client asking for one-off images (new texts, sizes, colours) cannot
 * push out the images everyone else asks for.
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';

/** Bump when the drawing changes, so clients holding an old ETag get the new image. */
export const RENDER_VERSION = 3;

export interface RenderedImage {
  body: Buffer;
  contentType: string;
  etag: string;
}

export interface RenderCacheOptions {
  /** Total bytes of image bodies kept (default 64 MiB). */
  maxBytes?: number;
  /** Largest single image kept (default 1 MiB); bigger ones are served but not cached. */
  maxEntryBytes?: number;
  /** Keys seen once that are remembered, waiting for their second request (default 10,000). */
  seenKeys?: number;
}

/** Strong ETag of a cache key: `"<27 characters of base64url SHA-1>"`. */
export function etagOf(key: string): string {
  return `"${createHash('sha1').update(`v${RENDER_VERSION}|${key}`).digest('base64url')}"`;
}

/** A short digest of a large input (a favicon data URL) for use inside a key. */
export function digestOf(value: string): string {
  return createHash('sha1').update(value).digest('base64url');
}

/**
 * `If-None-Match` matching (RFC 9110 §13.1.2, weak comparison): `*`, or any listed tag equal
 * to `etag` once a `W/` prefix is ignored.
 */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

export class RenderCache {
  private readonly entries: LRUCache<string, RenderedImage>;
  private readonly inFlight = new Map<string, Promise<RenderedImage>>();
  private readonly seenOnce: LRUCache<string, true>;

  constructor(options: RenderCacheOptions = {}) {
    const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
    this.entries = new LRUCache<string, RenderedImage>({
      maxSize: maxBytes,
      maxEntrySize: Math.min(options.maxEntryBytes ?? 1024 * 1024, maxBytes),
      // The body dominates; the key and object overhead are counted roughly.
      sizeCalculation: (image, key) => image.body.length + key.length * 2 + 128,
    });
    this.seenOnce = new LRUCache<string, true>({ max: options.seenKeys ?? 10_000 });
  }

  /**
   * The image for `key`: from the cache, from a render already under way for it, or by
   * calling `render` (whose result is cached from the key's second request on; a failed render
   * is not).
   */
  async getOrRender(key: string, contentType: string, render: () => Promise<Buffer>): Promise<{ image: RenderedImage; hit: boolean }> {
    const cached = this.entries.get(key);
    if (cached) return { image: cached, hit: true };
    let pending = this.inFlight.get(key);
    if (!pending) {
      const keep = this.seenOnce.delete(key);
      if (!keep) this.seenOnce.set(key, true);
      pending = render()
        .then((body) => {
          const image = { body, contentType, etag: etagOf(key) };
          if (keep) this.entries.set(key, image);
          return image;
        })
        .finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    return { image: await pending, hit: false };
  }
}
