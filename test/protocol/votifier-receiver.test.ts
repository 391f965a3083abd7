/**
 * The NuVotifier receiver of the tests (test/support/votifier.ts) against NuVotifier's own
 * JavaScript client (the `votifier2` package, NuVotifier/votifier2-js): a vote it sends
 * arrives, and a wrong token is refused with NuVotifier's answer. So the receiver our client
 * is tested against speaks NuVotifier's protocol, not only our reading of it.
 */
import { createRequire } from 'node:module';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startVotifierReceiver, type VotifierReceiver } from '../support/votifier.js';

type Callback = (error: Error | null) => void;
interface VoteOptions {
  host: string;
  port: number;
  token: string;
  vote: { serviceName: string; username: string; address: string; timestamp: number };
}
const sendVote = createRequire(import.meta.url)('votifier2') as (options: VoteOptions, callback: Callback) => void;

let nu: VotifierReceiver;
beforeAll(async () => {
  nu = await startVotifierReceiver({ kind: 'nuvotifier', tokens: { 'Other List': 'other-token' } });
});
afterAll(() => nu.close());

const send = (token: string, serviceName: string) =>
  new Promise<Error | null>((resolve) => {
    sendVote({ host: '127.0.0.1', port: nu.port, token, vote: { serviceName, username: 'Steve', address: '198.51.100.9', timestamp: 1_700_000_000_000 } }, resolve);
  });

it("takes a vote from NuVotifier's own client, with the token of its service or the default one", async () => {
  expect(await send(nu.token, 'Some List')).toBeNull();
  expect(await send('other-token', 'Other List')).toBeNull();
  expect(nu.votes).toEqual([
    { version: 2, service: 'Some List', username: 'Steve', address: '198.51.100.9', timestamp: '1700000000000' },
    { version: 2, service: 'Other List', username: 'Steve', address: '198.51.100.9', timestamp: '1700000000000' },
  ]);
});

it("refuses a wrong token with NuVotifier's answer, which that client reports as an error", async () => {
  const error = await send(nu.token, 'Other List');
  expect(error?.message).toMatch(/^CorruptedFrameException/);
  expect(nu.refusals).toEqual(['bad signature']);
});
