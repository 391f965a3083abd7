/**
 * The render worker: a thread of the render pool (./pool.ts). It loads @napi-rs/canvas, sharp
 * and the fonts, draws and encodes one image per task, and hands back the bytes; the main
 * thread never loads them.
 *
 * On Linux the thread lowers its own scheduling priority to the lowest (a nice value is a
 * thread's own there): when the cores are busy, the event loop's thread and every other
 * thread of the process run first, so drawing only ever takes CPU time nothing else wants.
 * Canvases are encoded by Skia on this thread, synchronously, for the same reason: an
 * asynchronous encoder would run on libuv's shared pool at normal priority.
 */
import { constants, setPriority } from 'node:os';
import { renderBadgeSvg } from './badge.js';
import { badgeTextMeasure } from './badge-text.js';
import { defaultIconPng, renderBanner, renderIcon, renderMotdBanner } from './drawing.js';
import type { RenderTask } from './tasks.js';

if (process.platform === 'linux') {
  try {
    setPriority(constants.priority.PRIORITY_LOW);
  } catch {
    // Not permitted here: the thread draws at the priority it has.
  }
}

/** A task's result: image bytes copied into a buffer of their own (the whole buffer is sent), or SVG text. */
export default async function render(task: RenderTask): Promise<Uint8Array | string> {
  switch (task.kind) {
    case 'banner':
      return own(await renderBanner(task.status, task.options));
    case 'icon':
      return own(await renderIcon(task.favicon, task.options));
    case 'motd':
      return own(await renderMotdBanner(task.text, task.options));
    case 'default-icon':
      return own(await defaultIconPng());
    case 'badge':
      return renderBadgeSvg(task.content, task.style, await badgeTextMeasure());
    case 'start':
      return '';
  }
}

/**
 * The bytes in an ArrayBuffer of their exact length: a message carries a view's whole
 * ArrayBuffer, and an encoder's output may be a slice of a larger one.
 */
function own(bytes: Buffer): Uint8Array {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength) return bytes;
  return new Uint8Array(bytes);
}
