/**
 * A process for checkpointer.test.ts: opens a store on the SQLite file given and prints its
 * thread count after a light start (the periodic expiry, request counters, a few checks), then
 * again after a thousand more checks.
 */
import { readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { openStore } from '../../src/store/index.js';
import { sampleCheck } from './sample-check.js';

const threads = () => readdirSync('/proc/self/task').length;
async function settle(): Promise<void> {
  await store.flush();
  await sleep(500);
  process.stdout.write(`${threads()}\n`);
}

const store = await openStore({ database: { kind: 'sqlite', path: process.argv[2]! }, checkRetentionDays: 30 });
store.count({ totalRequests: 5 });
for (let i = 0; i < 10; i++) store.recordCheck(sampleCheck(i));
await settle();
for (let i = 10; i < 1_010; i++) store.recordCheck(sampleCheck(i));
await settle();
await store.close();
