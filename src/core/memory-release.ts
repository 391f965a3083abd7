/**
 * Gives memory back to the system once a spell of work is over (docs/performance.md#memory).
 *
 * V8 keeps the young generation at the size a busy spell grew it to until it judges the
 * process idle, which a service with timers rarely looks. So the process watches itself: once
 * a second it reads the event loop's utilisation, and when the resident set has grown since the
 * last release, nothing is in flight (`busy()`: no request being answered, no ping outstanding)
 * and the loop has been quiet for two seconds, it asks V8 for a young-generation collection,
 * and for one more after six further quiet seconds. V8 shrinks the young generation in a
 * collection that finds little allocated over the seconds before it, hence the second.
 *
 * Only young-generation collections are asked for: their pause is the copying of what is
 * still alive in the young generation, which at a quiet moment is little (about a millisecond),
 * where a full collection pauses the loop in proportion to the whole heap (53 ms at 33 MiB,
 * 346 ms at 118 MiB on a 2-core VM). The old generation is left to V8's own collections, whose
 * marking runs in steps and on other threads.
 *
 * It needs `--expose-gc` (the start script passes it); without it nothing happens.
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks';

type Gc = (options: { type: 'minor' }) => void;

const INTERVAL_MS = 1_000;
/** Event loop utilisation at or below which a second counts as quiet. */
const QUIET_UTILISATION = 0.05;
/** Quiet seconds in a row before the first collection of a release, and before the second. */
const QUIET_BEFORE_FIRST = 2;
const QUIET_BEFORE_SECOND = 6;
/** Growth of the resident set since the last release that makes one worth its pauses. */
const MIN_GROWTH_BYTES = 16 * 1024 * 1024;

export interface MemoryReleaseOptions {
  /** Whether work is in flight (requests, pings): no collection is asked for then. */
  busy?: () => boolean;
  /**
   * Each collection asked for: how long it held the event loop, the process's CPU time meanwhile
   * (the pause less any time the system gave other processes), and the resident set before it.
   */
  onCollected?: (collection: { pauseMs: number; cpuMs: number; rssBefore: number }) => void;
}

/** Starts watching; returns a function that stops it. */
export function releaseMemoryWhenQuiet(options: MemoryReleaseOptions = {}): () => void {
  const gc = (globalThis as { gc?: Gc }).gc;
  if (!gc) return () => undefined;
  const rss = () => process.memoryUsage.rss();
  const busy = options.busy ?? (() => false);

  // The resident set after the last whole release (none yet: start-up's growth counts).
  let base = 0;
  let measureBase = false;
  let secondDue = false;
  let quiet = 0;
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    // Read a second after collecting, once the pages given back are gone from the resident set.
    if (measureBase) {
      base = rss();
      measureBase = false;
    }
    const now = performance.eventLoopUtilization();
    const isQuiet = performance.eventLoopUtilization(now, last).utilization <= QUIET_UTILISATION && !busy();
    last = now;
    quiet = isQuiet ? quiet + 1 : 0;
    // The two collections of a release span one quiet spell: work between them starts it over.
    if (!isQuiet) secondDue = false;
    if (secondDue ? quiet < QUIET_BEFORE_SECOND : quiet < QUIET_BEFORE_FIRST || rss() - base < MIN_GROWTH_BYTES) return;
    measureBase = secondDue;
    secondDue = !secondDue;
    quiet = 0;
    const rssBefore = rss();
    const started = performance.now();
    const cpu = process.cpuUsage();
    gc({ type: 'minor' });
    const spent = process.cpuUsage(cpu);
    options.onCollected?.({ pauseMs: performance.now() - started, cpuMs: (spent.user + spent.system) / 1000, rssBefore });
  }, INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
