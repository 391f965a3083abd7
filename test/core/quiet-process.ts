/**
 * A process for memory-release.test.ts: grows V8's young generation with a burst of garbage,
 * then goes quiet with releaseMemoryWhenQuiet() watching, printing the young generation's
 * resident size (bytes) each second on its own line.
 */
import v8 from 'node:v8';
import { releaseMemoryWhenQuiet } from '../../src/core/memory-release.js';

releaseMemoryWhenQuiet();
const youngBytes = () => v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.physical_space_size ?? 0;
let kept: unknown[] = [];
for (let i = 0; i < 3_000_000; i++) {
  const item = { i, text: `item ${i}` };
  if (i % 100 === 0) kept.push(item);
}
process.stdout.write(`${youngBytes()}\n`);
setInterval(() => {
  kept = kept.slice();
  process.stdout.write(`${youngBytes()}\n`);
}, 1_000);
