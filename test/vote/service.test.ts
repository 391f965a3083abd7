/**
 * The vote service's checks before any connection, on public addresses: a test never sends a
 * packet to one. The real resolver (an IP literal needs no DNS) and guard run; the socket
 * factory is a seam that records what would have been connected to and refuses it.
 */
import { describe, expect, it } from 'vitest';
import { ProbeError, TargetRefusedError } from '../../src/core/errors.js';
import type { Endpoint, StreamConnection } from '../../src/protocol/index.js';
import { AddressGuard, TargetResolver } from '../../src/resolve/index.js';
import { VoteService, type VoteRequest } from '../../src/vote/service.js';

function serviceRecording(deadlineMs = 50) {
  const guard = new AddressGuard([]);
  const attempts: string[] = [];
  const service = new VoteService({
    resolver: new TargetResolver({ dnsServers: ['127.0.0.1:5353'], guard }),
    guard,
    deadlineMs,
    connectTcp: async (endpoint: Endpoint): Promise<StreamConnection> => {
      attempts.push(`${endpoint.ip}:${endpoint.port}`);
      throw new ProbeError('connection_refused');
    },
  });
  return { service, attempts };
}

const request = (host: string, port: number): VoteRequest => ({ host, port, token: 't', vote: { service: 'Observer', username: 'Steve', address: '127.0.0.1', timestamp: 1 } });

describe('ports on public addresses', () => {
  it.each([1, 22, 443, 1023])('port %i of a public address is refused before any connection', async (port) => {
    const { service, attempts } = serviceRecording();
    await expect(service.send(request('1.1.1.1', port))).rejects.toThrow(TargetRefusedError);
    await expect(service.send(request('2606:4700:4700::1111', port))).rejects.toThrow(TargetRefusedError);
    expect(attempts).toEqual([]);
  });

  it('port 1024 and above of a public address are let through to the connection, answered alike at the deadline', async () => {
    const { service, attempts } = serviceRecording();
    for (const port of [1024, 8192, 65535]) {
      expect(await service.send(request('1.1.1.1', port))).toMatchObject({ sent: false, error_code: 'connection_refused' });
    }
    expect(attempts).toEqual(['1.1.1.1:1024', '1.1.1.1:8192', '1.1.1.1:65535']);
  });

  it('a non-public address is refused whatever the port', async () => {
    const { service, attempts } = serviceRecording();
    for (const host of ['10.0.0.1', '169.254.169.254', '127.0.0.1', '::1']) {
      await expect(service.send(request(host, 8192)), host).rejects.toThrow(TargetRefusedError);
    }
    expect(attempts).toEqual([]);
  });
});
