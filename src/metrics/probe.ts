/**
 * One probe of `GET /probe`: the status route's look-up (cache, coalescing, guard, budgets),
 * read as series (probe-text.ts), answered by the scrape's deadline.
 *
 * The deadline only cuts the wait: a look-up still running when it comes goes on to its own end
 * (PING_TIMEOUT_MS) and fills the cache, so the probe answers `timeout` now and the next scrape
 * finds the result. A ping is never shortened to a scraper's timeout, since its result is the
 * one every client of the cache is then answered with.
 */
import { HostNotFoundError } from '../core/errors.js';
import type { Edition } from '../core/types.js';
import { AUTO_EDITIONS, lookupEditions, type EditionChoice } from '../status/editions.js';
import type { LookupOptions, StatusLookup } from '../status/types.js';
import { offlineReading, readingOf, type EditionReading } from './probe-text.js';

/** What a scrape leaves itself to write the answer, out of its timeout (the blackbox exporter keeps as much). */
export const SCRAPE_TIMEOUT_MARGIN_MS = 500;

/**
 * The shortest wait a scrape timeout can ask for: however small the timeout a client sends, a
 * look-up gets this long before it is answered as `timeout` (its ping goes on regardless).
 */
export const MIN_PROBE_WAIT_MS = 500;

/**
 * How long a probe may wait for its look-up: the scrape timeout Prometheus sends
 * (`X-Prometheus-Scrape-Timeout-Seconds`, read by the caller) less SCRAPE_TIMEOUT_MARGIN_MS,
 * at least MIN_PROBE_WAIT_MS and never longer than PING_TIMEOUT_MS; null without a positive
 * timeout: the look-up's own end.
 */
export function probeDeadlineMs(scrapeTimeoutSeconds: number | undefined, pingTimeoutMs: number): number | null {
  if (scrapeTimeoutSeconds === undefined || !(scrapeTimeoutSeconds > 0)) return null;
  return Math.min(pingTimeoutMs, Math.max(scrapeTimeoutSeconds * 1000 - SCRAPE_TIMEOUT_MARGIN_MS, MIN_PROBE_WAIT_MS));
}

/**
 * The readings of `target`: one edition, or both with `auto`. A name without DNS records is a
 * server that does not answer (`dns_not_found`), as Prometheus users expect of a probe; every
 * other refusal (invalid address, a non-public target, a spent budget, a busy service) rejects
 * as the status route's error does. Past `deadlineMs`, the editions are read as `timeout`.
 */
export async function probeServer(
  status: StatusLookup,
  target: string,
  edition: EditionChoice,
  options: LookupOptions,
  deadlineMs: number | null,
): Promise<EditionReading[]> {
  const queried = options.query !== undefined;
  const editions: readonly Edition[] = edition === 'auto' ? AUTO_EDITIONS : [edition];
  const looked =
    edition === 'auto'
      ? lookupEditions(status, target, options).then((both) => both.answers.map((a, i) => readingOf(AUTO_EDITIONS[i] as Edition, a.status, a.cache, queried)))
      : status.lookup(target, edition, options).then((a) => [readingOf(edition, a.status, a.cache, queried)]);
  const readings = looked.catch((error: unknown) => {
    if (error instanceof HostNotFoundError) return editions.map((e) => offlineReading(e, 'dns_not_found', queried));
    throw error;
  });
  if (deadlineMs === null) return readings;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<EditionReading[]>((resolve) => {
    timer = setTimeout(() => resolve(editions.map((e) => offlineReading(e, 'timeout', queried))), deadlineMs);
  });
  // A look-up that fails after the deadline has nobody left to answer.
  readings.catch(() => {});
  try {
    return await Promise.race([readings, late]);
  } finally {
    clearTimeout(timer);
  }
}
