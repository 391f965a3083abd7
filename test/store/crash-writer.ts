/**
 * Child process of sqlite-crash.test.ts: writes checks to the SQLite file named by argv[2]
 * as fast as it can, 16 at a time, and prints the server id of each check once
 * recordCheck has resolved (i.e. once it is committed). It runs until it is killed.
 */
import { randomUUID } from 'node:crypto';
import { openStore } from '../../src/store/index.js';

const path = process.argv[2];
if (!path) throw new Error('usage: crash-writer.ts DB_PATH');
const store = await openStore({ database: { kind: 'sqlite', path }, checkRetentionDays: 30 }, undefined, {
  flushIntervalMs: 50,
});

async function writer(): Promise<never> {
  for (let i = 0; ; i++) {
    const serverId = randomUUID();
    await store.recordCheck({
      serverId,
      edition: 'java',
      host: `s${i}.example.com`,
      port: 25565,
      checkedAt: Date.now(),
      online: i % 3 !== 0,
      playersOnline: i % 50,
      playersMax: 100,
      latencyMs: 12,
      version: '1.21.4',
    });
    store.count({ totalChecks: 1, serverQueries: 1 });
    store.recordLookup(serverId, `client-${i % 7}`);
    process.stdout.write(`${serverId}\n`);
  }
}

await Promise.all(Array.from({ length: 16 }, writer));
