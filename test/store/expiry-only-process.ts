/**
 * A process for checkpointer.test.ts: opens a store on the SQLite file given, lets only the
 * periodic expiry write, then records one check, printing its thread count after each.
 */
import { readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { openStore } from '../../src/store/index.js';

const threads = () => readdirSync('/proc/self/task').length;
const store = await openStore({ database: { kind: 'sqlite', path: process.argv[2]! }, checkRetentionDays: 30 });
await store.flush();
await sleep(500);
process.stdout.write(`${threads()}\n`);
store.recordCheck({ serverId: 's', edition: 'java', host: 's.example.com', port: 25565, checkedAt: Date.now(), online: true, playersOnline: 1, playersMax: 10, latencyMs: 3, version: '1.21.4' });
await store.flush();
await sleep(500);
process.stdout.write(`${threads()}\n`);
await store.close();
