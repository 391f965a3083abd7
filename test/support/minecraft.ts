/**
 * Real third-party Minecraft servers on loopback for tests: minecraft-protocol 1.54.0 (Java
 * status + legacy replies) and bedrock-protocol 3.59.0 (RakNet unconnected pong).
 */
import { createRequire } from 'node:module';
import type { AddressInfo, Server as NetServer, Socket } from 'node:net';

const require = createRequire(import.meta.url);

export interface JavaServerOptions {
  host?: string;
  port?: number;
  motd?: string;
  /** A chat component used as `description` instead of `motd`. */
  description?: unknown;
  maxPlayers?: number;
  onlinePlayers?: number;
  sample?: Array<{ name: string; id: string }>;
  favicon?: string;
  /** Extra fields merged into the status JSON (enforcesSecureChat, forgeData, ...). */
  extra?: Record<string, unknown>;
}

export interface RunningJavaServer {
  host: string;
  port: number;
  /** TCP connections accepted so far. */
  connections: () => number;
  /** The addresses connections came from, each once, in the order first seen. */
  peers: () => string[];
  /** Handshake hostnames received, in order (what the client sent as server address). */
  handshakeHosts: string[];
  setOnlinePlayers(n: number): void;
  setMotd(text: string): void;
  close(): Promise<void>;
}

export async function startJavaServer(options: JavaServerOptions = {}): Promise<RunningJavaServer> {
  const mc = require('minecraft-protocol') as {
    createServer(o: Record<string, unknown>): {
      socketServer: NetServer;
      playerCount: number;
      motd: string;
      on(event: string, cb: (...args: unknown[]) => void): void;
      close(): void;
    };
  };
  const host = options.host ?? '127.0.0.1';
  const handshakeHosts: string[] = [];
  const server = mc.createServer({
    host,
    port: options.port ?? 0,
    'online-mode': false,
    motd: options.motd ?? 'A Minecraft Server',
    maxPlayers: options.maxPlayers ?? 20,
    favicon: options.favicon,
    hideErrors: true,
    beforePing: (response: Record<string, unknown>) => {
      const players = response.players as { sample: unknown[] };
      if (options.sample) players.sample = options.sample;
      if (options.description !== undefined) response.description = options.description;
      return { ...response, ...(options.extra ?? {}) };
    },
  });
  server.playerCount = options.onlinePlayers ?? 0;
  let connections = 0;
  server.on('connection', (client: unknown) => {
    const c = client as { on(e: string, cb: (p: { serverHost?: string }) => void): void };
    c.on('set_protocol', (packet) => {
      if (packet.serverHost !== undefined) handshakeHosts.push(packet.serverHost);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.on('listening', () => resolve());
    server.on('error', (e) => reject(e as Error));
  });
  const sockets = new Set<Socket>();
  const peers = new Set<string>();
  server.socketServer.on('connection', (socket: Socket) => {
    connections += 1;
    if (socket.remoteAddress !== undefined) peers.add(socket.remoteAddress);
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const port = (server.socketServer.address() as AddressInfo).port;
  return {
    host,
    port,
    connections: () => connections,
    peers: () => [...peers],
    handshakeHosts,
    setOnlinePlayers: (n) => {
      server.playerCount = n;
    },
    setMotd: (text) => {
      server.motd = text;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.socketServer.close(() => resolve());
        server.close();
      }),
  };
}

export interface BedrockServerOptions {
  host?: string;
  port: number;
  motd?: string;
  levelName?: string;
  playersOnline?: number;
  playersMax?: number;
  gamemode?: string;
  gamemodeId?: number;
  serverId?: string;
  version?: string;
}

export interface RunningBedrockServer {
  host: string;
  port: number;
  advertisement: Record<string, unknown>;
  close(): Promise<void>;
}

/**
 * bedrock-protocol needs a fixed UDP port (it does not report an ephemeral one): pick a free
 * one with `freeUdpPort()`.
 */
export async function startBedrockServer(options: BedrockServerOptions): Promise<RunningBedrockServer> {
  const bedrock = require('bedrock-protocol') as {
    createServer(o: Record<string, unknown>): { close(): void; advertisement: Record<string, unknown> };
  };
  const { ServerAdvertisement } = require('bedrock-protocol/src/server/advertisement') as {
    ServerAdvertisement: new (obj: Record<string, unknown>, port: number, version?: string) => Record<string, unknown>;
  };
  const host = options.host ?? '127.0.0.1';
  const advertisement = new ServerAdvertisement(
    {
      motd: options.motd ?? 'Bedrock Test Server',
      levelName: options.levelName ?? 'Test World',
      playersOnline: options.playersOnline ?? 0,
      playersMax: options.playersMax ?? 10,
      gamemode: options.gamemode ?? 'Survival',
      gamemodeId: options.gamemodeId ?? 0,
      serverId: options.serverId ?? '1234567890123456789',
    },
    options.port,
    options.version,
  );
  const server = bedrock.createServer({
    host,
    port: options.port,
    offline: true,
    advertisementFn: () => advertisement,
  });
  // Give RakNet a moment to bind its socket.
  await new Promise((r) => setTimeout(r, 200));
  return {
    host,
    port: options.port,
    advertisement,
    close: async () => {
      server.close();
    },
  };
}

