/**
 * Gives memory back to the system once a spell of work is over (docs/performance.md#memory).
 *
 * V8 keeps the young generation at the size a busy spell grew it to, and the old generation's
 * free pages, until it judges the process idle, which a service with timers rarely looks. So
 * the process watches itself: once a second it reads the event loop's utilisation, and when
 * the resident set has grown since the last such release and the loop has then been quiet for
 * two seconds, it asks for a full collection of the `last-resort` flavour, and for one more
 * after six further quiet seconds. Node 22 and later shrink the young generation in the first;
 * Node 20's V8 only in a collection that finds little allocated since the one before, hence
 * the second. Start-up is such a spell: its release comes some seconds after `listen`.
 *
 * It needs `--expose-gc` (the start script passes it); without it nothing happens.
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks';

type Gc = (options: { type: 'major'; execution: 'async'; flavor: 'last-resort' }) => void;

const INTERVAL_MS = 1_000;
/** Event loop utilisation at or below which a second counts as quiet. */
const QUIET_UTILISATION = 0.05;
/** Quiet seconds in a row before the first collection of a release, and before the second. */
const QUIET_BEFORE_FIRST = 2;
const QUIET_BEFORE_SECOND = 6;
/** Growth of the resident set since the last release that makes one worth its pauses. */
const MIN_GROWTH_BYTES = 16 * 1024 * 1024;

/** Starts watching; returns a function that stops it. */
export function releaseMemoryWhenQuiet(): () => void {
  const gc = (globalThis as { gc?: Gc }).gc;
  if (!gc) return () => undefined;
  const rss = () => process.memoryUsage.rss();

  // The resident set after the last whole release (none yet: start-up's growth counts). After
  // the first collection alone Node 20 still holds the young generation.
  let base = 0;
  let measureBase = false;
  let secondDue = false;
  let quiet = 0;
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    // Read a second after collecting: the collection runs as a task of its own.
    if (measureBase) {
      base = rss();
      measureBase = false;
    }
    const now = performance.eventLoopUtilization();
    const isQuiet = performance.eventLoopUtilization(now, last).utilization <= QUIET_UTILISATION;
    last = now;
    quiet = isQuiet ? quiet + 1 : 0;
    // The two collections of a release span one quiet spell: work between them starts it over.
    if (!isQuiet) secondDue = false;
    if (secondDue ? quiet < QUIET_BEFORE_SECOND : quiet < QUIET_BEFORE_FIRST || rss() - base < MIN_GROWTH_BYTES) return;
    measureBase = secondDue;
    secondDue = !secondDue;
    quiet = 0;
    gc({ type: 'major', execution: 'async', flavor: 'last-resort' });
  }, INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
