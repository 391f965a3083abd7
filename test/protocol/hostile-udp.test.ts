/**
 * The Bedrock client against hostile UDP servers (real sockets on 127.0.0.1, port 0). Each case
 * ends in a typed ProbeError within the deadline, or in a status when the damage is ignorable;
 * the client's UDP socket is released every time.
 */
import dgram from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { ProbeError } from '../../src/core/errors.js';
import { OFFLINE_MESSAGE_MAGIC } from '../../src/protocol/bedrock.js';
import { pingBedrock } from '../../src/protocol/index.js';
import { fixture } from './fixtures.js';
import { probeUdp } from './hostile.js';

const sockets: dgram.Socket[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.close();
});

async function udpServer(onPing: (ping: Buffer, remote: dgram.RemoteInfo, socket: dgram.Socket) => void) {
  const socket = dgram.createSocket('udp4');
  sockets.push(socket);
  socket.on('message', (message, remote) => onPing(message, remote, socket));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  return socket;
}

/** The captured bedrock-protocol pong, echoing the time of `ping`. */
function goodPong(ping: Buffer): Buffer {
  const reply = Buffer.from(fixture('bedrock-pong.hex'));
  ping.copy(reply, 1, 1, 9);
  return reply;
}

function probe(port: number, deadlineMs: number) {
  return probeUdp((signal) => pingBedrock({ ip: '127.0.0.1', port, hostname: 'x', signal }), deadlineMs);
}

async function expectFailure(port: number, code: string, deadlineMs = 1000) {
  const outcome = await probe(port, deadlineMs);
  expect(outcome.error).toBeInstanceOf(ProbeError);
  expect((outcome.error as ProbeError).code).toBe(code);
  expect(outcome.abortListeners).toBe(0);
  expect(outcome.socketReleased).toBe(true);
}

describe('pingBedrock against hostile servers', () => {
  it('silence → timeout, after resending the ping', async () => {
    let pings = 0;
    const server = await udpServer(() => {
      pings += 1;
    });
    await expectFailure(server.address().port, 'timeout', 1200);
    expect(pings).toBeGreaterThanOrEqual(2);
  });

  it('a lost first pong is recovered by the resend', async () => {
    let pings = 0;
    const server = await udpServer((ping, remote, socket) => {
      pings += 1;
      if (pings >= 2) socket.send(goodPong(ping), remote.port, remote.address);
    });
    const outcome = await probe(server.address().port, 3000);
    expect(outcome.error).toBeUndefined();
    expect(outcome.result?.extra.edition).toBe('MCPE');
    expect(outcome.socketReleased).toBe(true);
  });

  it('wrong magic → invalid_response', async () => {
    const server = await udpServer((ping, remote, socket) => {
      const reply = goodPong(ping);
      Buffer.alloc(16, 0xab).copy(reply, 17);
      socket.send(reply, remote.port, remote.address);
    });
    await expectFailure(server.address().port, 'invalid_response');
  });

  it('wrong echoed time → ignored as stale or forged → timeout', async () => {
    const server = await udpServer((_ping, remote, socket) => {
      const reply = Buffer.from(fixture('bedrock-pong.hex'));
      reply.writeBigInt64BE(0x7fffffffffffn, 1);
      socket.send(reply, remote.port, remote.address);
    });
    await expectFailure(server.address().port, 'timeout', 800);
  });

  it('truncated fields → invalid_response', async () => {
    const server = await udpServer((ping, remote, socket) => {
      socket.send(goodPong(ping).subarray(0, 60), remote.port, remote.address);
    });
    await expectFailure(server.address().port, 'invalid_response');
  });

  it('a server ID with too few fields → invalid_response', async () => {
    const server = await udpServer((ping, remote, socket) => {
      const id = Buffer.from('MCPE;only;three');
      const reply = Buffer.alloc(35 + id.length);
      reply[0] = 0x1c;
      ping.copy(reply, 1, 1, 9);
      OFFLINE_MESSAGE_MAGIC.copy(reply, 17);
      reply.writeUInt16BE(id.length, 33);
      id.copy(reply, 35);
      socket.send(reply, remote.port, remote.address);
    });
    await expectFailure(server.address().port, 'invalid_response');
  });

  it('a string length past the datagram → invalid_response', async () => {
    const server = await udpServer((ping, remote, socket) => {
      const reply = goodPong(ping);
      reply.writeUInt16BE(0xffff, 33);
      socket.send(reply, remote.port, remote.address);
    });
    await expectFailure(server.address().port, 'invalid_response');
  });

  it('replies from a different source port → ignored → timeout', async () => {
    const other = await udpServer(() => undefined);
    const server = await udpServer((ping, remote) => {
      other.send(goodPong(ping), remote.port, remote.address);
    });
    await expectFailure(server.address().port, 'timeout', 800);
  });

  it('a decoy from another port does not stop the real pong', async () => {
    const other = await udpServer(() => undefined);
    const server = await udpServer((ping, remote, socket) => {
      const decoy = goodPong(ping);
      Buffer.alloc(16).copy(decoy, 17); // would be invalid_response if it were read
      other.send(decoy, remote.port, remote.address, () => socket.send(goodPong(ping), remote.port, remote.address));
    });
    const outcome = await probe(server.address().port, 2000);
    expect(outcome.error).toBeUndefined();
    expect(outcome.result?.motd.clean_lines).toEqual(['Observer; Bedrock', 'Observer Level']);
  });
});
