/**
 * Gives memory back to the system once a spell of work is over (docs/performance.md#memory).
 *
 * V8 keeps the young generation at the size a busy spell grew it to, and the old generation's
 * free pages, until it judges the process idle, which a service with timers rarely looks. So
 * the process watches itself: once a second it reads the event loop's utilisation, and when
 * the resident set has grown since the last such pair of collections and the loop has then
 * been quiet for two seconds, it asks for a full collection of the `last-resort` flavour, and
 * for one more after six further quiet seconds. Newer V8s (Node 22 and later) shrink the young generation in
 * the first; Node 20's only in a collection that finds little allocated over the five seconds
 * before it, hence the second. Start-up is such a spell: its collections come some seconds
 * after `listen`.
 *
 * It needs `--expose-gc` (the start script passes it); without it nothing happens.
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks';

type GcOptions = { type: 'major'; execution: 'async'; flavor: 'last-resort' };
type Gc = (options: GcOptions) => void;

export interface MemoryReleaseOptions {
  /** How often the loop's utilisation is read (ms). */
  intervalMs?: number;
  /** Utilisation at or below which an interval counts as quiet. */
  quietUtilisation?: number;
  /** Quiet intervals in a row before the first collection, and before the second. */
  quietIntervals?: readonly [first: number, second: number];
  /** Growth of the resident set since the last collection that makes one worth its pause. */
  minGrowthBytes?: number;
  gc?: Gc | undefined;
  rss?: () => number;
}

/** Starts watching; returns a function that stops it. */
export function releaseMemoryWhenQuiet(options: MemoryReleaseOptions = {}): () => void {
  const gc = options.gc ?? (globalThis as { gc?: Gc }).gc;
  if (!gc) return () => undefined;
  const intervalMs = options.intervalMs ?? 1_000;
  const quietUtilisation = options.quietUtilisation ?? 0.05;
  const [first, second] = options.quietIntervals ?? [2, 6];
  const minGrowthBytes = options.minGrowthBytes ?? 16 * 1024 * 1024;
  const rss = options.rss ?? (() => process.memoryUsage.rss());

  // The resident set after the last pair of collections (none yet: start-up's growth counts).
  // Only a whole pair sets it: after the first alone Node 20 still holds the young generation.
  let base = 0;
  let measureBase = false;
  let secondDue = false;
  let quiet = 0;
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    // Read an interval after collecting: the collection runs as a task of its own.
    if (measureBase) {
      base = rss();
      measureBase = false;
    }
    const now = performance.eventLoopUtilization();
    const isQuiet = performance.eventLoopUtilization(now, last).utilization <= quietUtilisation;
    last = now;
    quiet = isQuiet ? quiet + 1 : 0;
    // Node 20 shrinks the young generation only when little was allocated since the previous
    // full collection: work between the two starts the pair over.
    if (!isQuiet) secondDue = false;
    if (secondDue ? quiet < second : quiet < first || rss() - base < minGrowthBytes) return;
    measureBase = secondDue;
    secondDue = !secondDue;
    quiet = 0;
    gc({ type: 'major', execution: 'async', flavor: 'last-resort' });
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
