/**
 * A small Query (GS4) responder on loopback, port 0 (or a given port): it answers the handshake
 * with its challenge token and a full stat request carrying that token (as a signed int32, like
 * vanilla) with a fixture body, prefixed with the type byte and the client's session ID.
 * `behaviour` turns it hostile for the failure tests.
 */
import dgram from 'node:dgram';

/** What `query-vanilla-1.8.hex` decodes to (the vanilla 1.8 reply published by py-mine/mcstatus). */
export const VANILLA_1_8_RESULT = {
  players: ['Dinnerbone', 'Djinnibone', 'Steve'],
  plugins: { name: 'vanilla', list: [] },
  software: '1.8',
  map: 'world',
  gameType: 'SMP',
  gameId: 'MINECRAFT',
  hostname: 'A Minecraft Server',
  playersOnline: 3,
  playersMax: 20,
  hostPort: 25565,
  hostIp: '192.168.56.1',
};

export type ResponderBehaviour =
  /** Answers as a server does. */
  | 'honest'
  /** Never answers. */
  | 'silent'
  /** Answers with a session ID one higher than the client's. */
  | 'wrong-session'
  /** Answers the full stat with a string that never ends (no NUL anywhere). */
  | 'endless-string'
  /** Answers every packet with 64 datagrams of 8 KiB for another session. */
  | 'flood'
  /** Answers from 127.0.0.2 (same port) instead of the address the client sent to. */
  | 'other-address';

export interface QueryResponder {
  port: number;
  /** Datagrams received, and full stat requests answered. */
  received: number;
  answered: number;
  close(): Promise<void>;
}

export interface ResponderOptions {
  body: Buffer;
  /** Challenge token, sent as decimal text; default a negative one (the signed-int32 pitfall). */
  token?: number;
  behaviour?: ResponderBehaviour;
  host?: string;
  port?: number;
}

function bind(socket: dgram.Socket, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, host, () => {
      socket.off('error', reject);
      resolve();
    });
  });
}

export async function startQueryResponder(options: ResponderOptions): Promise<QueryResponder> {
  const token = options.token ?? -1_243_424;
  const behaviour = options.behaviour ?? 'honest';
  const host = options.host ?? '127.0.0.1';
  const socket = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
  let other: dgram.Socket | undefined;
  const state = { received: 0, answered: 0 };
  await bind(socket, options.port ?? 0, host);
  const port = socket.address().port;
  if (behaviour === 'other-address') {
    other = dgram.createSocket('udp4');
    await bind(other, port, '127.0.0.2');
  }

  const reply = (bytes: Buffer, remote: dgram.RemoteInfo) => (other ?? socket).send(bytes, remote.port, remote.address);

  socket.on('message', (message, remote) => {
    state.received += 1;
    if (behaviour === 'silent') return;
    if (message.length < 7 || message.readUInt16BE(0) !== 0xfefd) return;
    const type = message[2];
    let session = message.readInt32BE(3);
    if (behaviour === 'wrong-session') session = (session + 1) | 0;
    if (behaviour === 'flood') {
      const junk = Buffer.alloc(8192, 0x41);
      junk[0] = 0x00;
      junk.writeInt32BE((session + 7) | 0, 1);
      for (let i = 0; i < 64; i++) socket.send(junk, remote.port, remote.address);
      return;
    }
    const header = Buffer.alloc(5);
    header[0] = type ?? 0;
    header.writeInt32BE(session, 1);
    if (type === 0x09) {
      reply(Buffer.concat([header, Buffer.from(`${token}\0`, 'latin1')]), remote);
    } else if (type === 0x00 && message.length >= 11 && message.readInt32BE(7) === (token | 0)) {
      state.answered += 1;
      const body = behaviour === 'endless-string' ? Buffer.alloc(4000, 0x61) : options.body;
      reply(Buffer.concat([header, body]), remote);
    }
  });

  return {
    port,
    get received() {
      return state.received;
    },
    get answered() {
      return state.answered;
    },
    close: async () => {
      await new Promise<void>((resolve) => socket.close(() => resolve()));
      if (other) await new Promise<void>((resolve) => other.close(() => resolve()));
    },
  };
}
