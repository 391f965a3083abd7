/**
 * Real third-party Minecraft servers for the honest-server tests, on loopback only:
 * minecraft-protocol (Java status, legacy replies) and bedrock-protocol (RakNet pong).
 */
import dgram from 'node:dgram';
import type net from 'node:net';
import type { AddressInfo } from 'node:net';
import bedrock from 'bedrock-protocol';
import mc from 'minecraft-protocol';

/** A valid 1×1 PNG. */
export const PNG_DATA_URL =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

export const JAVA_SERVER_CONFIG = {
  /** What the legacy replies carry (minecraft-protocol uses the plain `motd` option for them). */
  motd: '§aObserver §ltest§r server',
  maxPlayers: 42,
  favicon: PNG_DATA_URL,
  /** What the modern status carries (set through beforePing). */
  description: {
    text: 'Hello ',
    color: 'gold',
    extra: [{ text: 'World', bold: true, color: '#ff8800' }, '\n§bsecond line'],
  },
  online: 3,
  sample: [
    { name: 'Alice', id: '4566e69f-c907-48ee-8d71-d7ba5aa00d20' },
    { name: '§cBob', id: '00000000-0000-0000-0000-000000000002' },
  ],
} as const;

export interface RunningServer {
  port: number;
  close(): Promise<void>;
}

export interface JavaServerOptions {
  host?: string;
  /** Changes the status JSON the server sends (after the defaults above are applied). */
  modify?: (response: Record<string, unknown>) => Record<string, unknown> | void;
  favicon?: string;
}

/** minecraft-protocol 1.54.0 server (its default version, 1.21.1), offline mode, on an ephemeral port. */
export async function startJavaServer(options: JavaServerOptions = {}): Promise<RunningServer> {
  const server = mc.createServer({
    'online-mode': false,
    host: options.host ?? '127.0.0.1',
    port: 0,
    motd: JAVA_SERVER_CONFIG.motd,
    maxPlayers: JAVA_SERVER_CONFIG.maxPlayers,
    favicon: options.favicon ?? JAVA_SERVER_CONFIG.favicon,
    hideErrors: true,
    beforePing: (response: Record<string, unknown>) => {
      const players = response.players as Record<string, unknown>;
      players.online = JAVA_SERVER_CONFIG.online;
      players.sample = JAVA_SERVER_CONFIG.sample;
      response.description = JAVA_SERVER_CONFIG.description;
      response.enforcesSecureChat = true;
      return options.modify?.(response) ?? response;
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', () => resolve());
    server.once('error', reject);
  });
  const socketServer = (server as unknown as { socketServer: net.Server }).socketServer;
  return {
    port: (socketServer.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        socketServer.once('close', () => resolve());
        server.close();
      }),
  };
}

/** A UDP port that was free a moment ago (bedrock-protocol cannot listen on port 0). */
export async function freeUdpPort(host = '127.0.0.1'): Promise<number> {
  const socket = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
  await new Promise<void>((resolve) => socket.bind(0, host, () => resolve()));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}

export const BEDROCK_SERVER_CONFIG = {
  /** `\;` is how a semicolon is escaped in the advertisement (bedrock-protocol writes the MOTD as is). */
  motd: '§aObserver\\; Bedrock',
  levelName: 'Observer Level',
  serverId: '13253860892328930865',
  gamemode: 'Survival',
  gamemodeId: 0,
  maxPlayers: 24,
} as const;

/** bedrock-protocol 3.59.0 server (RakNet via raknet-native), offline mode. IPv4 only: its backends cannot bind ::1. */
export async function startBedrockServer(): Promise<RunningServer & { version: string; protocol: number }> {
  const port = await freeUdpPort();
  const advertisement = new bedrock.ServerAdvertisement(
    {
      motd: BEDROCK_SERVER_CONFIG.motd,
      levelName: BEDROCK_SERVER_CONFIG.levelName,
      serverId: BEDROCK_SERVER_CONFIG.serverId,
      gamemode: BEDROCK_SERVER_CONFIG.gamemode,
      gamemodeId: BEDROCK_SERVER_CONFIG.gamemodeId,
      playersMax: BEDROCK_SERVER_CONFIG.maxPlayers,
    },
    port,
    undefined as unknown as string,
  );
  const server = new bedrock.Server({
    host: '127.0.0.1',
    port,
    offline: true,
    raknetBackend: 'raknet-native',
    maxPlayers: BEDROCK_SERVER_CONFIG.maxPlayers,
    advertisementFn: () => advertisement,
  } as ConstructorParameters<typeof bedrock.Server>[0]);
  await server.listen();
  return {
    port,
    version: advertisement.version,
    protocol: advertisement.protocol,
    close: () => server.close(),
  };
}
