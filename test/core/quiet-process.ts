/**
 * A process for memory-release.test.ts: grows V8's young generation with a burst of garbage,
 * then goes quiet with releaseMemoryWhenQuiet() watching, printing the young generation's
 * resident size (bytes) each second on its own line. With `interrupted`, three seconds of steady
 * work come 3.5 s into the quiet, between the two collections of a pair. With `busy`, work is in
 * flight (as requests or pings would be) for the first ten seconds.
 */
import v8 from 'node:v8';
import { setTimeout as sleep } from 'node:timers/promises';
import { releaseMemoryWhenQuiet } from '../../src/core/memory-release.js';

const busyUntil = process.argv.includes('busy') ? Date.now() + 10_000 : 0;
releaseMemoryWhenQuiet({ busy: () => Date.now() < busyUntil });
const youngBytes = () => v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.physical_space_size ?? 0;
let kept: unknown[] = [];
function burst(): void {
  for (let i = 0; i < 3_000_000; i++) {
    const item = { i, text: `item ${i}` };
    if (i % 100 === 0) kept.push(item);
  }
}
burst();
process.stdout.write(`${youngBytes()}\n`);
setInterval(() => {
  kept = kept.slice();
  process.stdout.write(`${youngBytes()}\n`);
}, 1_000);
if (process.argv.includes('interrupted')) {
  await sleep(3_500);
  // Three seconds of steady work, as a load would bring: garbage in small slices, some kept.
  const until = Date.now() + 3_000;
  while (Date.now() < until) {
    for (let i = 0; i < 20_000; i++) {
      const item = { i, text: `item ${i}` };
      if (i % 1_000 === 0) kept.push(item);
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
}
