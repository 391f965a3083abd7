/**
 * Canvas → PNG with Skia's own encoder, synchronously on the drawing thread (a render worker,
 * ./worker.ts): all of an image's work then runs at that thread's low priority, where an
 * asynchronous encoder would run on libuv's shared pool. Its files are also smaller than
 * libvips' at zlib level 6 (about 6 against 11 KB for a MOTD banner).
 */
import type { Canvas } from '@napi-rs/canvas';

export function encodePng(canvas: Canvas): Buffer {
  return canvas.encodeSync('png');
}
