/** What the main thread asks of the render pool (./pool.ts, ./worker.ts): plain data, copied between threads. */
import type { ServerStatus } from '../core/types.js';
import type { BadgeContent } from './badge.js';
import type { BadgeStyle } from './badge-options.js';
import type { BannerOptions, IconOptions, MotdBannerOptions } from './options.js';

export type RenderTask =
  | { kind: 'banner'; status: ServerStatus; options: BannerOptions }
  | { kind: 'icon'; favicon: string | null; options: IconOptions }
  | { kind: 'motd'; text: string; options: MotdBannerOptions }
  | { kind: 'default-icon' }
  /** Nothing to draw: resolves once a thread has loaded the drawing code (RenderPool.started). */
  | { kind: 'start' }
  | { kind: 'badge'; content: BadgeContent; style: BadgeStyle };
