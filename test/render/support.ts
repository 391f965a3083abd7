/**
 * Helpers for image tests: decoding to raw pixels, sampling, comparing with a tolerance, and
 * the reference images under test/fixtures/render/ (rewritten with UPDATE_REFERENCES=1).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCanvas } from '@napi-rs/canvas';
import sharp from 'sharp';
import type { ServerStatus } from '../../src/core/types.js';
import { formatMotd } from '../../src/motd/index.js';

export const REFERENCE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'render');

export interface DecodedImage {
  format: string;
  width: number;
  height: number;
  channels: number;
  /** RGBA, row-major. */
  data: Buffer;
}

/** Decodes a PNG/WebP into RGBA pixels, with the container format sharp detected. */
export async function decode(image: Buffer): Promise<DecodedImage> {
  const meta = await sharp(image).metadata();
  const { data, info } = await sharp(image).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { format: meta.format ?? 'unknown', width: info.width, height: info.height, channels: info.channels, data };
}

export type Rgba = [number, number, number, number];

export function pixelAt(image: DecodedImage, x: number, y: number): Rgba {
  const i = (Math.floor(y) * image.width + Math.floor(x)) * 4;
  return [image.data[i]!, image.data[i + 1]!, image.data[i + 2]!, image.data[i + 3]!];
}

export function hexRgb(hex: string): [number, number, number] {
  const v = Number.parseInt(hex.replace('#', ''), 16);
  return [(v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff];
}

/** Pixels in a rectangle whose colour is within `tolerance` (per channel) of `hex`, opaque. */
export function countColor(
  image: DecodedImage,
  hex: string,
  rect: { x: number; y: number; width: number; height: number } = { x: 0, y: 0, width: image.width, height: image.height },
  tolerance = 8,
): number {
  const [r, g, b] = hexRgb(hex);
  let n = 0;
  for (let y = Math.max(0, Math.floor(rect.y)); y < Math.min(image.height, rect.y + rect.height); y++) {
    for (let x = Math.max(0, Math.floor(rect.x)); x < Math.min(image.width, rect.x + rect.width); x++) {
      const [pr, pg, pb, pa] = pixelAt(image, x, y);
      if (pa > 200 && Math.abs(pr - r) <= tolerance && Math.abs(pg - g) <= tolerance && Math.abs(pb - b) <= tolerance) n++;
    }
  }
  return n;
}

/**
 * Fraction of pixels of two same-sized images that differ by more than `threshold` in any
 * channel (alpha included). Different sizes count as entirely different.
 */
export function differingFraction(a: DecodedImage, b: DecodedImage, threshold = 32): number {
  if (a.width !== b.width || a.height !== b.height) return 1;
  let differing = 0;
  const pixels = a.width * a.height;
  for (let p = 0; p < pixels; p++) {
    const i = p * 4;
    for (let c = 0; c < 4; c++) {
      if (Math.abs(a.data[i + c]! - b.data[i + c]!) > threshold) {
        differing++;
        break;
      }
    }
  }
  return differing / pixels;
}

/** Fraction of differing pixels inside a rectangle. */
export function differingIn(a: DecodedImage, b: DecodedImage, rect: { x: number; y: number; width: number; height: number }, threshold = 32): number {
  let differing = 0;
  let total = 0;
  for (let y = rect.y; y < rect.y + rect.height; y++) {
    for (let x = rect.x; x < rect.x + rect.width; x++) {
      total++;
      const p = pixelAt(a, x, y);
      const q = pixelAt(b, x, y);
      if (p.some((v, c) => Math.abs(v - q[c]!) > threshold)) differing++;
    }
  }
  return total === 0 ? 0 : differing / total;
}

export const UPDATE_REFERENCES = process.env.UPDATE_REFERENCES === '1';

/**
 * Compares `image` with the reference `name` (a PNG under `dir`, test/fixtures/render/ by default), writing it
 * instead when UPDATE_REFERENCES=1 or when it does not exist yet. Returns the differing
 * fraction (0 when written).
 */
export async function compareWithReference(name: string, image: Buffer, threshold = 8, dir = REFERENCE_DIR): Promise<number> {
  const path = join(dir, name);
  if (UPDATE_REFERENCES || !existsSync(path)) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(path, image);
    return 0;
  }
  return differingFraction(await decode(image), await decode(readFileSync(path)), threshold);
}

/**
 * A 64x64 pixel-art favicon as a data URL: 8x8 blocks in four colours, so nearest-neighbour
 * enlarging can be told from smoothing.
 */
export async function pixelArtFavicon(side = 64, block = 8): Promise<string> {
  const canvas = createCanvas(side, side);
  const ctx = canvas.getContext('2d');
  const colors = ['#e11d48', '#2563eb', '#facc15', '#16a34a'];
  for (let y = 0; y < side; y += block) {
    for (let x = 0; x < side; x += block) {
      ctx.fillStyle = colors[((x / block) + 2 * (y / block)) % colors.length]!;
      ctx.fillRect(x, y, block, block);
    }
  }
  const pixels = ctx.getImageData(0, 0, side, side).data;
  const png = await sharp(Buffer.from(pixels.buffer, pixels.byteOffset, pixels.byteLength), {
    raw: { width: side, height: side, channels: 4 },
  })
    .png()
    .toBuffer();
  return `data:image/png;base64,${png.toString('base64')}`;
}

/** A status as the status service returns it, for a server that answered. */
export function sampleStatus(overrides: Partial<ServerStatus> = {}): ServerStatus {
  return {
    query: { host: 'play.example.net', port: 25565, legacy: false, bedrock: false },
    server_id: '0b1f7d1c-5d7e-5b5e-9f8a-1234567890ab',
    ip_address: '203.0.113.7',
    icmp: true,
    online: true,
    error: null,
    error_code: null,
    version: { name: 'Paper 1.21.4', protocol: 769 },
    players: { online: 1234, max: 5000, sample: [] },
    motd: formatMotd('§6§lExample Network §7» §a1.21 §bSkyblock\n§fNew season! §c§nJoin now§r §d§oand have fun'),
    favicon: null,
    roundTripLatency: 42.4,
    stale: false,
    checked_at: '2025-01-01T00:00:00.000Z',
    srvRecord: null,
    ...overrides,
  };
}

/** The same server, offline. */
export function offlineStatus(overrides: Partial<ServerStatus> = {}): ServerStatus {
  return sampleStatus({
    online: false,
    error: 'connection refused',
    version: null,
    players: null,
    motd: null,
    favicon: null,
    roundTripLatency: null,
    ...overrides,
  });
}
