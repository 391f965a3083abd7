/**
 * The render pool: images are drawn and encoded in worker threads (./worker.ts, tinypool),
 * never on the event loop's thread, which keeps every cheap answer (health, a cached status)
 * on time while images are drawn. The main thread only copies a task's data to a worker and
 * the bytes back.
 *
 * The first image starts the first thread, so an instance that never draws one holds no
 * isolate for it (docs/performance.md#memory); a thread idle for `idleTimeoutMs` ends and
 * gives its memory back. At most `threads` draw at once; more tasks wait in the pool's queue,
 * which the admission control in front of it (src/http/admission.ts) keeps short.
 */
import Tinypool from 'tinypool';
import { workerModule } from '../core/module-worker.js';
import type { ServerStatus } from '../core/types.js';
import type { BadgeContent } from './badge.js';
import type { BadgeStyle } from './badge-options.js';
import type { BannerOptions, IconOptions, MotdBannerOptions } from './options.js';
import type { RenderTask } from './tasks.js';
import { NO_TRACER, type Tracer } from '../core/tracing.js';

export interface RenderPoolOptions {
  /** Worker threads drawing at once (RENDER_THREADS). */
  threads: number;
  /** How long an idle thread lives on (default 60 s). */
  idleTimeoutMs?: number;
  /** A span for each image drawn (`render.<kind>`); none without it. */
  tracer?: Tracer;
}

export class RenderPool {
  private pool: Tinypool | null = null;
  private defaultIcon: Promise<Buffer> | null = null;
  private starting: Promise<unknown> | null = null;
  private closed = false;

  constructor(private readonly options: RenderPoolOptions) {}

  /** The PNG banner of a status (./banner.ts). */
  async banner(status: ServerStatus, options: BannerOptions): Promise<Buffer> {
    return this.image({ kind: 'banner', status, options });
  }

  /** The icon of a favicon data URL, or of the default icon (./icon.ts). */
  async icon(favicon: string | null, options: IconOptions): Promise<Buffer> {
    return this.image({ kind: 'icon', favicon, options });
  }

  /** The MOTD banner as PNG (./motd-banner.ts). */
  async motdBanner(text: string, options: MotdBannerOptions): Promise<Buffer> {
    return this.image({ kind: 'motd', text, options });
  }

  /** Observer's default icon as a 64x64 PNG (./default-icon.ts), drawn once. */
  defaultIconPng(): Promise<Buffer> {
    this.defaultIcon ??= this.image({ kind: 'default-icon' }).catch((error: unknown) => {
      this.defaultIcon = null;
      throw error;
    });
    return this.defaultIcon;
  }

  /** A badge as SVG (./badge.ts), its text measured with the bundled font in the worker. */
  async badgeSvg(content: BadgeContent, style: BadgeStyle): Promise<string> {
    return (await this.traced({ kind: 'badge', content, style })) as string;
  }

  /**
   * Resolves once a thread is running, starting one if none is: loading canvas, sharp and the
   * fonts takes a while (seconds on a busy machine), and the admission
   * control waits for it before a render takes a slot, so that renders queued behind the first
   * one are not refused for the thread's start.
   */
  started(): Promise<void> {
    if (this.threads > 0 && this.starting === null) return Promise.resolve();
    this.starting ??= this.run({ kind: 'start' }).finally(() => (this.starting = null));
    return this.starting.then(() => undefined);
  }

  /** Worker threads running now. */
  get threads(): number {
    return this.pool?.threads.length ?? 0;
  }

  /** Ends the threads; tasks still queued are refused. */
  async close(): Promise<void> {
    this.closed = true;
    const pool = this.pool;
    this.pool = null;
    await pool?.destroy();
  }

  private async image(task: Exclude<RenderTask, { kind: 'start' }>): Promise<Buffer> {
    const bytes = (await this.traced(task)) as Uint8Array;
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** A drawing, in its span (`render.icon`, `render.banner`, ...) when traces are on. */
  private traced(task: Exclude<RenderTask, { kind: 'start' }>): Promise<unknown> {
    const tracer = this.options.tracer ?? NO_TRACER;
    if (!tracer.enabled) return this.run(task);
    return tracer.span(`render.${task.kind}`, () => this.run(task));
  }

  private run(task: RenderTask): Promise<unknown> {
    if (this.closed) return Promise.reject(new Error('the render pool is closed'));
    this.pool ??= new Tinypool({
      filename: workerModule('render/worker').href,
      // Not the flags of the main thread (a test runner's, say).
      execArgv: [],
      minThreads: 0,
      maxThreads: this.options.threads,
      idleTimeout: this.options.idleTimeoutMs ?? 60_000,
      // Drawing allocates little on the JavaScript heap (pixels live in Skia's and libvips'
      // native memory): a small young generation keeps the isolate small.
      resourceLimits: { maxYoungGenerationSizeMb: 8 },
    });
    // No deadline of its own: aborting a running task ends its thread, and the next image would
    // wait for a new one to load canvas, sharp and the fonts. The admission's queue and the HTTP
    // request timeout bound what a client waits.
    return this.pool.run(task);
  }
}
