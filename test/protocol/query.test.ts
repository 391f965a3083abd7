/**
 * Query (GS4 full stat): packets against byte fixtures of real servers' replies, then the
 * client against a UDP responder serving them and against hostile responders (real sockets
 * on loopback). Sources of the fixtures: test/fixtures/protocol/README.md.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ProbeError } from '../../src/core/errors.js';
import {
  decodeFullStat,
  decodeQueryHandshake,
  encodeFullStatRequest,
  encodeQueryHandshake,
  fullStatToResult,
  MAX_QUERY_PACKETS,
  parseQueryPlugins,
  QUERY_RESEND_INTERVAL_MS,
  queryServer,
} from '../../src/protocol/query.js';
import { codeOf, fixture, hex } from './fixtures.js';
import { probeUdp } from './hostile.js';
import { startQueryResponder, VANILLA_1_8_RESULT, type QueryResponder, type ResponderBehaviour } from './query-responder.js';

const SESSION = 0x01020304;

/** A reply datagram: type, session ID, then the fixture body. */
function reply(type: number, body: Buffer, session = SESSION): Buffer {
  const header = Buffer.alloc(5);
  header[0] = type;
  header.writeInt32BE(session, 1);
  return Buffer.concat([header, body]);
}

const stat = (name: string) => {
  const decoded = decodeFullStat(reply(0, fixture(name)), SESSION);
  if (!decoded) throw new Error('not decoded');
  return fullStatToResult(decoded);
};

describe('Query packets', () => {
  it('writes the handshake and the full stat request as the protocol lays them out', () => {
    expect(encodeQueryHandshake(SESSION)).toEqual(hex('fefd09 01020304'));
    expect(encodeFullStatRequest(SESSION, 570350778)).toEqual(hex('fefd00 01020304 21fedcba 00000000'));
  });

  it('reads the challenge token as a signed 32-bit decimal and sends it back as int32 big-endian', () => {
    expect(decodeQueryHandshake(reply(9, fixture('query-handshake-reply.hex')), SESSION)).toBe(570350778);
    const negative = decodeQueryHandshake(reply(9, Buffer.from('-1243424\0')), SESSION);
    expect(negative).toBe(-1243424);
    expect(encodeFullStatRequest(SESSION, negative as number).subarray(7, 11)).toEqual(hex('ffed06e0'));
    expect(codeOf(() => decodeQueryHandshake(reply(9, Buffer.from('4294967295\0')), SESSION))).toBe('invalid_response');
    expect(codeOf(() => decodeQueryHandshake(reply(9, Buffer.from('12ab\0')), SESSION))).toBe('invalid_response');
  });

  it('ignores replies of another session or type', () => {
    expect(decodeQueryHandshake(reply(9, fixture('query-handshake-reply.hex'), SESSION + 1), SESSION)).toBeUndefined();
    expect(decodeFullStat(reply(9, fixture('query-vanilla-1.8.hex')), SESSION)).toBeUndefined();
    expect(decodeFullStat(reply(0, fixture('query-vanilla-1.8.hex'), 7), SESSION)).toBeUndefined();
  });

  it('decodes a vanilla 1.8 full stat', () => {
    expect(stat('query-vanilla-1.8.hex')).toEqual(VANILLA_1_8_RESULT);
  });

  it('decodes Paper, whose hostname holds a NUL, without losing the fields after it', () => {
    const result = stat('query-paper-1.16.5.hex');
    expect(result.plugins).toEqual({ name: 'Paper on 1.16.5-R0.1-SNAPSHOT', list: [] });
    expect(result.hostname).toContain('*K');
    expect(result).toMatchObject({ software: '1.16.5', gameType: 'SMP', map: 'world', playersOnline: 0, players: [] });
  });

  it('decodes a Geyser (Bedrock) listener whose keys come in another order', () => {
    expect(stat('query-geyser-bedrock.hex')).toMatchObject({
      software: 'Geyser (git-master-0fd903e) 1.18.10',
      hostPort: 19132,
      hostIp: '1.1.1.1',
      map: 'Geyser',
      playersOnline: 1,
      playersMax: 100,
      plugins: { name: 'vanilla', list: [] },
    });
  });

  it('decodes PocketMine-MP with its plugin list', () => {
    expect(stat('query-pocketmine.hex')).toMatchObject({
      players: ['Alex', 'Steve'],
      plugins: { name: 'PocketMine-MP 5.23.3', list: ['DevTools 1.15.0', 'EconomyAPI 5.7.2'] },
      gameId: 'MINECRAFTPE',
      software: 'v1.21.50',
      hostPort: 19132,
    });
  });

  it('parses the plugins string as Bukkit and PocketMine write it', () => {
    expect(parseQueryPlugins('')).toEqual({ name: 'vanilla', list: [] });
    expect(parseQueryPlugins('CraftBukkit on Bukkit 1.2.5-R4.0')).toEqual({ name: 'CraftBukkit on Bukkit 1.2.5-R4.0', list: [] });
    expect(parseQueryPlugins('Paper: WorldEdit 7.2.15;  Vault 1.7.3 ;')).toEqual({ name: 'Paper', list: ['WorldEdit 7.2.15', 'Vault 1.7.3'] });
  });

  it('refuses a string without its NUL, a reply without its player section, too many players', () => {
    expect(codeOf(() => decodeFullStat(reply(0, Buffer.alloc(4000, 0x61)), SESSION))).toBe('invalid_response');
    const truncated = fixture('query-vanilla-1.8.hex');
    expect(codeOf(() => decodeFullStat(reply(0, truncated.subarray(0, truncated.length - 2)), SESSION))).toBe('invalid_response');
    const names = Buffer.from(Array.from({ length: 1001 }, (_, i) => `p${i}\0`).join(''));
    const many = Buffer.concat([Buffer.alloc(11), Buffer.from('map\0w\0\0'), hex('01706c617965725f0000'), names, Buffer.from([0])]);
    expect(codeOf(() => decodeFullStat(reply(0, many), SESSION))).toBe('response_too_large');
  });
});

const responders: QueryResponder[] = [];
afterEach(async () => {
  for (const r of responders.splice(0)) await r.close();
});

async function responder(behaviour: ResponderBehaviour, body = fixture('query-vanilla-1.8.hex'), token?: number) {
  const r = await startQueryResponder({ body, behaviour, ...(token === undefined ? {} : { token }) });
  responders.push(r);
  return r;
}

function probe(port: number, deadlineMs: number) {
  return probeUdp((signal) => queryServer({ ip: '127.0.0.1', port, hostname: 'x', signal }), deadlineMs);
}

async function expectFailure(port: number, code: string, deadlineMs = 1200) {
  const outcome = await probe(port, deadlineMs);
  expect(outcome.error).toBeInstanceOf(ProbeError);
  expect((outcome.error as ProbeError).code).toBe(code);
  expect(outcome.abortListeners).toBe(0);
  expect(outcome.socketReleased).toBe(true);
}

describe('queryServer against a UDP responder serving the fixtures', () => {
  it.each([
    ['query-vanilla-1.8.hex', { players: ['Dinnerbone', 'Djinnibone', 'Steve'], software: '1.8' }],
    ['query-paper-1.16.5.hex', { plugins: { name: 'Paper on 1.16.5-R0.1-SNAPSHOT', list: [] } }],
    ['query-geyser-bedrock.hex', { hostPort: 19132, map: 'Geyser' }],
    ['query-pocketmine.hex', { players: ['Alex', 'Steve'], gameId: 'MINECRAFTPE' }],
  ])('%s', async (name, expected) => {
    const server = await responder('honest', fixture(name));
    const outcome = await probe(server.port, 5000);
    expect(outcome.error).toBeUndefined();
    expect(outcome.result).toMatchObject(expected);
    expect(server.answered).toBe(1);
    expect(outcome.socketReleased).toBe(true);
  });

  it('queries over IPv6 (::1)', async () => {
    const server = await startQueryResponder({ body: fixture('query-pocketmine.hex'), host: '::1' });
    responders.push(server);
    const result = await queryServer({ ip: '::1', port: server.port, hostname: 'x', signal: AbortSignal.timeout(5000) });
    expect(result.players).toEqual(['Alex', 'Steve']);
  });

  it('sends a positive challenge token back as the server gave it', async () => {
    const server = await responder('honest', fixture('query-vanilla-1.8.hex'), 570350778);
    expect((await probe(server.port, 5000)).result?.software).toBe('1.8');
  });
});

describe('queryServer against hostile responders', () => {
  it('no reply → timeout, after resending the handshake', async () => {
    const server = await responder('silent');
    await expectFailure(server.port, 'timeout');
    expect(server.received).toBeGreaterThanOrEqual(2);
  });

  it('a silent port gets at most MAX_QUERY_PACKETS (3) packets, however long the deadline', async () => {
    const server = await responder('silent');
    // A clock that jumps a resend interval at every reading: each wait ends at once, so only
    // the packet cap stops the resends before the (real) deadline.
    let fake = 0;
    const now = () => (fake += QUERY_RESEND_INTERVAL_MS);
    const outcome = await queryServer({ ip: '127.0.0.1', port: server.port, hostname: 'x', signal: AbortSignal.timeout(1200) }, { now }).then(
      () => null,
      (error: unknown) => error,
    );
    expect((outcome as ProbeError).code).toBe('timeout');
    expect(MAX_QUERY_PACKETS).toBe(3);
    expect(server.received).toBe(MAX_QUERY_PACKETS);
  });

  it('a wrong session ID is ignored → timeout', async () => {
    const server = await responder('wrong-session');
    await expectFailure(server.port, 'timeout');
    expect(server.received).toBeGreaterThanOrEqual(1);
  });

  it('an endless string → invalid_response', async () => {
    const server = await responder('endless-string');
    await expectFailure(server.port, 'invalid_response', 5000);
  });

  it('a flood of packets stops at the byte cap → response_too_large', async () => {
    const server = await responder('flood');
    await expectFailure(server.port, 'response_too_large', 5000);
  });

  it('a reply from another loopback address (127.0.0.2) is ignored → timeout', async () => {
    const server = await responder('other-address');
    await expectFailure(server.port, 'timeout');
    expect(server.answered + server.received).toBeGreaterThanOrEqual(1);
  });

  it('a closed port → connection refused, quickly', async () => {
    const server = await responder('silent');
    const port = server.port;
    await server.close();
    responders.splice(0);
    await expectFailure(port, 'connection_refused', 5000);
  });
});
