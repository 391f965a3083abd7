/**
 * Observer's clients against real third-party servers on loopback: minecraft-protocol 1.54.0
 * (Java status, legacy replies) and bedrock-protocol 3.59.0 (RakNet). Every field is compared
 * with what the server was configured to send (test/protocol/servers.ts).
 */
import dgram from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProbeError } from '../../src/core/errors.js';
import { pingBedrock, pingJava, pingLegacy } from '../../src/protocol/index.js';
import { fixture } from './fixtures.js';
import {
  BEDROCK_SERVER_CONFIG,
  JAVA_SERVER_CONFIG,
  PNG_DATA_URL,
  startBedrockServer,
  startJavaServer,
  type RunningServer,
} from './servers.js';

const DEADLINE_MS = 5000;

function target(ip: string, port: number, hostname = 'play.example.test') {
  return { ip, port, hostname, signal: AbortSignal.timeout(DEADLINE_MS) };
}

describe('pingJava against minecraft-protocol', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startJavaServer();
  });
  afterAll(() => server.close());

  it('reads the modern status: version, players with sample, chat-component MOTD, favicon, secure chat', async () => {
    const result = await pingJava(target('127.0.0.1', server.port));
    expect(result.version).toEqual({ name: '1.21.1', protocol: 767 });
    expect(result.players).toEqual({
      online: JAVA_SERVER_CONFIG.online,
      max: JAVA_SERVER_CONFIG.maxPlayers,
      sample: [
        { name: 'Alice', id: JAVA_SERVER_CONFIG.sample[0].id },
        { name: 'Bob', id: JAVA_SERVER_CONFIG.sample[1].id },
      ],
    });
    expect(result.motd.clean_lines).toEqual(['Hello World', 'second line']);
    expect(result.motd.html).toContain('<span style="color: #ff8800; font-weight: bold">World</span>');
    expect(result.favicon).toBe(PNG_DATA_URL);
    expect(result.extra).toEqual({ enforcesSecureChat: true });
    expect(result.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it('answers many pings in a row and in parallel', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => pingJava(target('127.0.0.1', server.port))));
    expect(results.every((r) => r.players?.max === JAVA_SERVER_CONFIG.maxPlayers)).toBe(true);
  });

  it('reads the legacy §1 reply the same server gives to the 1.6 ping', async () => {
    const result = await pingLegacy(target('127.0.0.1', server.port));
    expect(result.version).toEqual({ name: '1.21.1', protocol: 767 });
    // minecraft-protocol answers legacy pings with its plain `motd` and its real player count (0).
    expect(result.motd.raw).toBe(JAVA_SERVER_CONFIG.motd);
    expect(result.motd.html).toBe(
      '<span style="color: #55ff55">Observer </span><span style="color: #55ff55; font-weight: bold">test</span> server',
    );
    expect(result.players).toEqual({ online: 0, max: JAVA_SERVER_CONFIG.maxPlayers, sample: [] });
    expect(result.favicon).toBeNull();
  });
});

describe('pingJava against minecraft-protocol variants', () => {
  it('drops a favicon that is not a PNG data URL and keeps the rest of the status', async () => {
    const server = await startJavaServer({ favicon: 'data:image/jpeg;base64,/9j/4AAQSkZJRg==' });
    try {
      const result = await pingJava(target('127.0.0.1', server.port));
      expect(result.favicon).toBeNull();
      expect(result.version?.name).toBe('1.21.1');
      expect(result.players?.online).toBe(JAVA_SERVER_CONFIG.online);
    } finally {
      await server.close();
    }
  });

  it('reads mod lists a modded server adds (FML2 forgeData, NeoForge isModded)', async () => {
    const server = await startJavaServer({
      modify: (response) => ({
        ...response,
        isModded: true,
        forgeData: { fmlNetworkVersion: 2, channels: [], mods: [{ modId: 'neoforge', modmarker: '21.1.1' }] },
        previewsChat: false,
      }),
    });
    try {
      const result = await pingJava(target('127.0.0.1', server.port));
      expect(result.extra).toEqual({
        enforcesSecureChat: true,
        previewsChat: false,
        modLoader: 'neoforge',
        mods: [{ id: 'neoforge', version: '21.1.1' }],
      });
    } finally {
      await server.close();
    }
  });

  it('works over IPv6 (::1), Java and legacy', async () => {
    const server = await startJavaServer({ host: '::1' });
    try {
      const modern = await pingJava(target('::1', server.port));
      expect(modern.players?.max).toBe(JAVA_SERVER_CONFIG.maxPlayers);
      const legacy = await pingLegacy(target('::1', server.port));
      expect(legacy.version?.protocol).toBe(767);
    } finally {
      await server.close();
    }
  });

  it('fails with connection_refused once the server is gone', async () => {
    const server = await startJavaServer();
    await server.close();
    await expect(pingJava(target('127.0.0.1', server.port))).rejects.toMatchObject({
      name: 'ProbeError',
      code: 'connection_refused',
    });
  });
});

describe('pingBedrock against bedrock-protocol', () => {
  let server: RunningServer & { version: string; protocol: number };
  beforeAll(async () => {
    server = await startBedrockServer();
  });
  afterAll(() => server.close());

  it('reads every advertised field', async () => {
    const result = await pingBedrock(target('127.0.0.1', server.port));
    expect(result.version).toEqual({ name: server.version, protocol: server.protocol });
    expect(result.players).toEqual({ online: 0, max: BEDROCK_SERVER_CONFIG.maxPlayers, sample: [] });
    expect(result.motd.raw_lines).toEqual(['§aObserver; Bedrock', BEDROCK_SERVER_CONFIG.levelName]);
    expect(result.motd.clean).toBe('Observer; Bedrock\nObserver Level');
    expect(result.favicon).toBeNull();
    expect(result.extra).toEqual({
      edition: 'MCPE',
      serverGuid: BEDROCK_SERVER_CONFIG.serverId,
      levelName: BEDROCK_SERVER_CONFIG.levelName,
      gameMode: BEDROCK_SERVER_CONFIG.gamemode,
      gameModeId: BEDROCK_SERVER_CONFIG.gamemodeId,
      portIPv4: server.port,
      portIPv6: server.port,
    });
    expect(result.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it('answers pings in parallel', async () => {
    const results = await Promise.all(Array.from({ length: 10 }, () => pingBedrock(target('127.0.0.1', server.port))));
    expect(results.every((r) => r.extra.serverGuid === BEDROCK_SERVER_CONFIG.serverId)).toBe(true);
  });
});

describe('pingBedrock over IPv6 (::1)', () => {
  // bedrock-protocol's RakNet backends cannot bind ::1 (raknet-native fails, jsp-raknet is
  // IPv4 only), so this server replays the pong bedrock-protocol sent for the fixture,
  // echoing the time of each ping.
  it('pings a UDP server on ::1', async () => {
    const captured = fixture('bedrock-pong.hex');
    const socket = dgram.createSocket('udp6');
    socket.on('message', (ping, remote) => {
      const reply = Buffer.from(captured);
      ping.copy(reply, 1, 1, 9);
      socket.send(reply, remote.port, remote.address);
    });
    await new Promise<void>((resolve) => socket.bind(0, '::1', () => resolve()));
    try {
      const result = await pingBedrock(target('::1', socket.address().port));
      expect(result.extra.edition).toBe('MCPE');
      expect(result.motd.clean_lines).toEqual(['Observer; Bedrock', 'Observer Level']);
    } finally {
      socket.close();
    }
  });

  it('gets a typed error, never a hang, when nothing listens', async () => {
    const socket = dgram.createSocket('udp6');
    await new Promise<void>((resolve) => socket.bind(0, '::1', () => resolve()));
    const port = socket.address().port;
    await new Promise<void>((resolve) => socket.close(() => resolve()));
    const error = await pingBedrock({ ...target('::1', port), signal: AbortSignal.timeout(1000) }).catch((e) => e);
    expect(error).toBeInstanceOf(ProbeError);
    // Loopback reports the ICMP port-unreachable; elsewhere silence ends in a timeout.
    expect(['connection_refused', 'timeout']).toContain(error.code);
  });
});
