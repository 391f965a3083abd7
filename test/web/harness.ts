/// <reference lib="dom" />
/**
 * The web front as users meet it: the whole service (composeApp: SQLite store, status
 * service, every route) on a loopback port, real Minecraft servers on loopback, and real
 * headless Chromium. Every page opened through `open()` records console errors, requests to
 * other origins and the bytes moved over the wire.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import { composeApp, type ComposeOptions } from '../../src/compose.js';
import { testConfig } from '../support/app.js';

export interface Front {
  origin: string;
  app: Awaited<ReturnType<typeof composeApp>>['app'];
  store: Awaited<ReturnType<typeof composeApp>>['store'];
  /** Writes what the look-ups so far recorded (their checks are decided after the answer). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The whole service on a loopback port. With BLOCKLIST_SOURCE, the list is loaded before the
 * first request (main.ts loads it in the background once listening).
 */
export async function startFront(env: Record<string, string> = {}, options: Pick<ComposeOptions, 'clock' | 'writes'> = {}): Promise<Front> {
  const dir = mkdtempSync(join(tmpdir(), 'observer-web-'));
  const config = testConfig({
    DATABASE_URL: `sqlite:${join(dir, 'observer.db')}`,
    RATE_LIMIT_STATUS: '100000',
    RATE_LIMIT_GENERAL: '100000',
    RATE_LIMIT_MEDIA: '100000',
    TARGET_PINGS_PER_MINUTE: '100000',
    NEW_SERVERS_PER_CLIENT_PER_DAY: '1000000',
    LOG_LEVEL: 'silent',
    ...env,
  });
  const { app, store, status, blocklist } = await composeApp(config, { ...options, icmp: null, logger: false });
  if (blocklist && !(await blocklist.load())) throw new Error('the test blocklist did not load');
  await app.listen({ host: '127.0.0.1', port: 0 });
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return {
    origin,
    app,
    store,
    async flush() {
      await status.recorded();
      await store.flush();
    },
    async close() {
      // Teardown: nothing in flight matters any more (a page's last poll must not hold close()).
      app.server.closeAllConnections();
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs teardown steps in order, each bounded: a step still running after `ms` is reported on
 * stderr by name and left behind, so one stuck step (a busy browser's close) cannot hold the
 * file past its hook timeout or keep the others from running.
 */
export async function tearDown(steps: Array<[string, (() => Promise<unknown>) | undefined]>, ms = 20_000): Promise<void> {
  for (const [name, step] of steps) {
    if (step === undefined) continue;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)));
    const outcome = await Promise.race([step().then(() => 'done' as const, () => 'failed' as const), late]);
    clearTimeout(timer);
    if (outcome !== 'done') process.stderr.write(`teardown: ${name} ${outcome === 'late' ? `still running after ${ms} ms` : 'failed'}\n`);
  }
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-background-networking',
      '--disable-gpu',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--font-render-hinting=none',
    ],
  });
}

export interface Opened {
  page: Page;
  /** Console errors and uncaught exceptions, as `text (url)`. */
  errors: string[];
  /** Requests to the API (not its fonts) as they happened: `request <path>`, `response <status> <path>`. */
  api: string[];
  foreign: string[];
  /** Per response: URL, status, content type, bytes over the wire (headers + encoded body). */
  responses: Array<{ url: string; status: number; type: string; bytes: Promise<number> }>;
  /** Requests made and not yet finished or failed. */
  pending(): number;
  close(): Promise<void>;
}

/** A fresh browser context (no cache) with the page at `path` loaded; `prepare` runs before it loads (a fixed clock, say). */
export async function open(
  browser: Browser,
  front: Front,
  path: string,
  options: BrowserContextOptions = {},
  prepare?: (page: Page) => Promise<void>,
): Promise<Opened> {
  const context = await browser.newContext({ viewport: { width: 1024, height: 900 }, deviceScaleFactor: 1, ...options });
  const page = await context.newPage();
  await prepare?.(page);
  const errors: string[] = [];
  const foreign: string[] = [];
  const responses: Opened['responses'] = [];
  const api: string[] = [];
  let pending = 0;
  page.on('request', () => (pending += 1));
  page.on('requestfinished', () => (pending -= 1));
  page.on('requestfailed', () => (pending -= 1));
  const apiPath = (u: string) => {
    if (!u.startsWith(front.origin)) return null;
    const url = new URL(u);
    // The API's answers; the fonts under it are static files.
    return url.pathname.startsWith('/api/v1/') && !url.pathname.startsWith('/api/v1/widget/fonts/') ? `${url.pathname}${url.search}` : null;
  };
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('request', (r) => {
    const u = r.url();
    if (u.startsWith('data:') || u === 'about:blank') return;
    if (new URL(u).origin !== front.origin) foreign.push(u);
    const path = apiPath(u);
    if (path) api.push(`request ${path}`);
  });
  page.on('response', (r) => {
    const path = apiPath(r.url());
    if (path) api.push(`response ${r.status()} ${path}`);
    const sizes = r
      .request()
      .sizes()
      .then((s) => s.responseHeadersSize + s.responseBodySize)
      .catch(() => 0);
    responses.push({ url: r.url(), status: r.status(), type: r.headers()['content-type'] ?? '', bytes: sizes });
  });
  await page.goto(`${front.origin}${path}`);
  return {
    page,
    errors,
    api,
    foreign,
    responses,
    pending: () => pending,
    async close() {
      await context.close();
    },
  };
}

/**
 * Resolves once the page has settled: no part of it still says it is loading (`aria-busy`),
 * and every request it made has been answered. Named conditions only, never a wait for a
 * quiet spell of the network, which a busy machine may never give.
 */
export async function settled(o: Opened): Promise<void> {
  await o.page.waitForSelector('[aria-busy="true"]', { state: 'detached' });
  await expect.poll(() => o.pending(), { timeout: 60_000 }).toBe(0);
}

/** The page stayed clean: no console error, nothing asked of another origin. */
export async function expectClean(opened: Opened): Promise<void> {
  expect(opened.errors).toEqual([]);
  expect(opened.foreign).toEqual([]);
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical violations of the page (and of its frames, with `iframes`). */
export async function seriousViolations(o: Opened, iframes = false) {
  for (const frame of iframes ? o.page.frames() : [o.page.mainFrame()]) await frame.addScriptTag({ content: AXE_SOURCE });
  const violations = await o.page.evaluate(async (withFrames) => {
    const axe = (window as unknown as { axe: { run: (c: Document, o: object) => Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown; failureSummary?: string }> }> }> } }).axe;
    const result = await axe.run(document, { iframes: withFrames, resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => `${JSON.stringify(n.target)}: ${n.failureSummary ?? ''}`) }));
  }, iframes);
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
