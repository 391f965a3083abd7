/**
 * process.nextTick optimised for the calls requests make, on Node 20.
 *
 * Every answered request schedules about ten ticks inside node:http and its streams. Node 20's
 * V8 optimises nextTick from the calls it has seen when it gets hot, and start-up (module
 * loading, plugin registration, worker threads) leaves it optimised so that building each tick
 * takes the generic path: 0.7–0.8 µs a call in a started service against 0.1 µs in a bare
 * process, 7 µs of CPU per health request (docs/performance.md). Calling it a hundred thousand
 * times with one plain callback before anything else runs lets V8 optimise it for that shape
 * first, and it stays fast. It costs about 10 ms once. Node 22 and later keep it fast either
 * way, so they skip it.
 */
const CALLS = 100_000;

export async function warmNextTick(): Promise<void> {
  if (Number(process.versions.node.split('.')[0]) > 20) return;
  const noop = () => undefined;
  for (let i = 0; i < CALLS; i++) process.nextTick(noop);
  // The ticks run before the immediate: start-up goes on with the queue empty.
  await new Promise((resolve) => setImmediate(resolve));
}
