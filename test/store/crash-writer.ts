/**
 * Child process of sqlite-crash.test.ts: queues checks to the SQLite file named by argv[2]
 * as fast as it can, BURST at a time between two turns of the event loop, and prints the
 * server id of each check and the time once recordCheck has returned (i.e. once it is queued,
 * not yet committed). Counters and look-ups are queued beside them. It runs until it is killed.
 */
import { randomUUID } from 'node:crypto';
import { setImmediate as turn } from 'node:timers/promises';
import { openStore } from '../../src/store/index.js';

const BURST = 10;

const path = process.argv[2];
if (!path) throw new Error('usage: crash-writer.ts DB_PATH');
const store = await openStore({ database: { kind: 'sqlite', path }, checkRetentionDays: 30 });

for (let i = 0; ; ) {
  let lines = '';
  for (let b = 0; b < BURST; b++, i++) {
    const serverId = randomUUID();
    store.recordCheck({
      serverId,
      edition: 'java',
      host: `s${i}.example.com`,
      port: 25565,
      checkedAt: Date.now(),
      online: i % 3 !== 0,
      playersOnline: i % 50,
      playersMax: 100,
      latencyMs: 12,
    });
    store.count({ totalChecks: 1, serverQueries: 1 });
    store.recordLookup(serverId, `client-${i % 7}`);
    lines += `${serverId} ${Date.now()}\n`;
  }
  process.stdout.write(lines);
  await turn();
}
