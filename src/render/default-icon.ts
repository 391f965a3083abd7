/**
 * Observer's own default server icon (original artwork, drawn here as 16x16 pixel art): a
 * stone block with an eye whose iris has the service's emerald accent. Served when a server
 * has no favicon, is offline or unknown.
 */
import { createCanvas } from '@napi-rs/canvas';
import { DEFAULT_ICON_SIZE } from './options.js';
import { encodePng } from './png.js';

export { DEFAULT_ICON_SIZE } from './options.js';

const PALETTE: Readonly<Record<string, string>> = {
  O: '#1b2130', // outline
  H: '#8b95a5', // lit edge
  S: '#6b7482', // stone
  s: '#575f6c', // rivet
  D: '#424955', // shaded edge
  K: '#10141c', // eye socket
  g: '#0b7a57', // iris rim
  G: '#10b981', // iris
  L: '#6ee7b7', // iris light
  W: '#ecfdf5', // glint
  P: '#052e22', // pupil
};

// One character per pixel; '.' is transparent.
const ART = [
  '.OOOOOOOOOOOOOO.',
  'OHHHHHHHHHHHHHHO',
  'OHSSSSSSSSSSSSDO',
  'OHSsSSSSSSSSsSDO',
  'OHSSSSKKKKSSSSDO',
  'OHSSKKggggKKSSDO',
  'OHSKgGGLLGGgKSDO',
  'OHKgGLWPPGGGgKDO',
  'OHKgGGPPPPGGgKDO',
  'OHSKgGGPPGGgKSDO',
  'OHSSKKggggKKSSDO',
  'OHSSSSKKKKSSSSDO',
  'OHSsSSSSSSSSsSDO',
  'OHSSSSSSSSSSSSDO',
  'ODDDDDDDDDDDDDDO',
  '.OOOOOOOOOOOOOO.',
] as const;

let cached: Promise<Buffer> | null = null;

/** The default icon as a 64x64 PNG (drawn once per process; the same bytes every time). */
export function defaultIconPng(): Promise<Buffer> {
  cached ??= drawDefaultIcon();
  return cached;
}

async function drawDefaultIcon(): Promise<Buffer> {
  const scale = DEFAULT_ICON_SIZE / ART.length;
  const canvas = createCanvas(DEFAULT_ICON_SIZE, DEFAULT_ICON_SIZE);
  const ctx = canvas.getContext('2d');
  ART.forEach((row, y) => {
    [...row].forEach((char, x) => {
      const color = PALETTE[char];
      if (!color) return;
      ctx.fillStyle = color;
      ctx.fillRect(x * scale, y * scale, scale, scale);
    });
  });
  return encodePng(canvas);
}
