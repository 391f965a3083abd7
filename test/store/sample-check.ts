/** An online check of server `s<i>`, now: rows for tests that need many of them. */
import type { CheckRecord } from '../../src/store/index.js';

export function sampleCheck(i: number): CheckRecord {
  return {
    serverId: `s${i}`,
    edition: 'java',
    host: `s${i}.example.com`,
    port: 25565,
    checkedAt: Date.now(),
    online: true,
    playersOnline: 1,
    playersMax: 10,
    latencyMs: 3,
  };
}
