/**
 * What the service keeps per server (its parsed address, its status, the status's copy with
 * the blocked flag) and what a ping returns are built in one shape per kind, so that V8 gives
 * every object of a kind the same hidden class. On Node 20 a property added after an object
 * spread gives each object a hidden class of its own: about 500 bytes more per kept status in
 * a cache of thousands, and slower reads of every field wherever such objects go. Checked with
 * V8's own %HaveSameMap, against a real server, on real look-ups of different names.
 */
import { setFlagsFromString } from 'node:v8';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseAddress } from '../../src/resolve/address.js';
import { withBlockedFlag } from '../../src/status/blocklist.js';
import { createStatusService } from '../../src/status/index.js';
import { FakeClock } from '../support/clock.js';
import { testConfig } from '../support/app.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';

setFlagsFromString('--allow-natives-syntax');
const sameHiddenClass = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

let plain: RunningJavaServer;
let withExtras: RunningJavaServer;
beforeAll(async () => {
  plain = await startJavaServer({ motd: 'plain' });
  withExtras = await startJavaServer({ motd: 'extras', extra: { enforcesSecureChat: true, previewsChat: false } });
});
afterAll(async () => {
  await plain.close();
  await withExtras.close();
});

it('gives parsed addresses of different names one hidden class', () => {
  // Many of them: V8 takes its fast path for a spread only once it has seen it a few times.
  const parsed = Array.from({ length: 100 }, (_, i) => parseAddress(`s${i}.example.com:${i + 1}`));
  for (const address of parsed) expect(sameHiddenClass(address, parsed[0]!)).toBe(true);
});

it('gives the statuses of different servers, and their copies with the blocked flag, one hidden class each', async () => {
  const status = withBlockedFlag(createStatusService({ config: testConfig(), clock: new FakeClock(), icmp: null }), null);
  const names = (prefix: string) => Array.from({ length: 20 }, (_, i) => `${prefix}${i}`);
  for (const server of [plain, withExtras]) {
    const answers = await Promise.all(names(`s${server.port}-`).map((name) => status.lookup(`${name}.any.observer.test:${server.port}`, 'java')));
    expect(new Set(answers.map((answer) => answer.status.query.host)).size).toBe(answers.length);
    for (const answer of answers) {
      expect(answer.status.online).toBe(true);
      expect(sameHiddenClass(answer.status, answers[0]!.status)).toBe(true);
    }
  }
  // Nothing listens on port 1 of loopback: refused, offline.
  const offline = await Promise.all(names('off').map((name) => status.lookup(`${name}.any.observer.test:1`, 'java')));
  for (const answer of offline) {
    expect(answer.status.online).toBe(false);
    expect(sameHiddenClass(answer.status, offline[0]!.status)).toBe(true);
  }
});
