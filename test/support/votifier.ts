/**
 * Votifier receivers for the tests, written from the protocol as the receivers implement it
 * (src/protocol/votifier.ts names the sources), on loopback:
 *  - `votifier`: Votifier 1.9. Greets `VOTIFIER 1.9`, reads the 256-byte block, decrypts it with
 *    its private key and closes; a block it cannot decrypt leaves the connection open, as
 *    Votifier's receive loop does.
 *  - `nuvotifier`: NuVotifier. Greets `VOTIFIER 2 <challenge>` and takes either protocol, told
 *    apart by the 0x733a magic: a v2 message (challenge, then the signature under the token of
 *    its service or `default`) is answered `{"status":"ok"}` or NuVotifier's error, a v1 block is
 *    read and the connection closed whether it decrypted or not.
 * Decryption is raw RSA with the PKCS#1 v1.5 padding checked by hand: Node 20 refuses PKCS#1
 * v1.5 decryption, and later lines answer a bad block with random bytes instead of an error
 * (implicit rejection), which would hide a block the receiver cannot decrypt.
 * Hostile behaviours no real receiver shows: `silent` (never greets), `close-after-greeting`,
 * `answer-first` (`{"status":"ok"}` right behind the greeting, before any vote), `no-answer` (a
 * NuVotifier that reads the vote and never answers), `garbage` (an HTTP-like line).
 */
import { constants, createHmac, generateKeyPairSync, privateDecrypt, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import net from 'node:net';

export interface ReceivedVote {
  version: 1 | 2;
  service: string;
  username: string;
  address: string;
  timestamp: string;
}

export type ReceiverBehaviour = 'normal' | 'silent' | 'close-after-greeting' | 'answer-first' | 'no-answer' | 'garbage';

export interface VotifierReceiver {
  port: number;
  /** Votes taken, in order. */
  votes: ReceivedVote[];
  /** What the receiver refused, in order: `cannot decrypt`, `bad signature`, `unknown service`, `bad challenge`, `malformed`. */
  refusals: string[];
  /** The public key as Votifier's `public.key` holds it (base64 of the SubjectPublicKeyInfo DER), and as PEM. */
  publicKey: string;
  publicKeyPem: string;
  /** NuVotifier's `default` token. */
  token: string;
  /** Connections accepted so far. */
  connections(): number;
  /** Connections still open. */
  open(): number;
  close(): Promise<void>;
}

export interface ReceiverOptions {
  kind: 'votifier' | 'nuvotifier';
  behaviour?: ReceiverBehaviour;
  /** NuVotifier's tokens by service name; `default` (random unless given) serves every other service. */
  tokens?: Record<string, string>;
  host?: string;
}

/** RSA without padding, then PKCS#1 v1.5 type 2 unpadding (RFC 8017 §7.2.2); null when the block is not one. */
export function decryptVoteBlock(block: Buffer, key: KeyObject): Buffer | null {
  if (block.length !== 256) return null;
  let raw: Buffer;
  try {
    raw = privateDecrypt({ key, padding: constants.RSA_NO_PADDING }, block);
  } catch {
    // A block encrypted for a larger modulus: no RSA block of this key at all.
    return null;
  }
  const separator = raw.indexOf(0, 2);
  // 0x00 0x02, at least 8 non-zero padding bytes, 0x00, the message.
  if (raw[0] !== 0 || raw[1] !== 2 || separator < 10) return null;
  return raw.subarray(separator + 1);
}

function parseV1(text: string): ReceivedVote | null {
  const fields = text.split('\n');
  if (fields.length < 5 || fields[0] !== 'VOTE') return null;
  return { version: 1, service: fields[1]!, username: fields[2]!, address: fields[3]!, timestamp: fields[4]! };
}

/** NuVotifier's error answer: its exception's class and message. */
const errorAnswer = (cause: string, error: string) => `${JSON.stringify({ status: 'error', cause, error })}\r\n`;

export async function startVotifierReceiver(options: ReceiverOptions): Promise<VotifierReceiver> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const tokens: Record<string, string> = { default: randomBytes(16).toString('hex'), ...options.tokens };
  const behaviour = options.behaviour ?? 'normal';
  const votes: ReceivedVote[] = [];
  const refusals: string[] = [];
  const sockets = new Set<net.Socket>();
  let accepted = 0;

  const takeV1 = (socket: net.Socket, block: Buffer) => {
    const clear = decryptVoteBlock(block, privateKey);
    const vote = clear === null ? null : parseV1(clear.toString('latin1'));
    if (vote) votes.push(vote);
    else refusals.push(clear === null ? 'cannot decrypt' : 'malformed');
    // Votifier 1.9 leaves a connection it could not read a vote from open; NuVotifier closes it.
    if (vote || options.kind === 'nuvotifier') socket.end();
  };

  const takeV2 = (socket: net.Socket, message: string, challenge: string) => {
    const refuse = (why: string, cause: string, error: string) => {
      refusals.push(why);
      socket.end(errorAnswer(cause, error));
    };
    let payload: Record<string, unknown>;
    let outer: { payload?: unknown; signature?: unknown };
    try {
      outer = JSON.parse(message) as typeof outer;
      payload = JSON.parse(String(outer.payload)) as Record<string, unknown>;
    } catch {
      return refuse('malformed', 'JsonSyntaxException', 'malformed JSON');
    }
    if (payload.challenge !== challenge) return refuse('bad challenge', 'CorruptedFrameException', 'Challenge is not valid');
    const token = tokens[String(payload.serviceName)] ?? tokens.default;
    if (token === undefined) return refuse('unknown service', 'RuntimeException', `Unknown service '${String(payload.serviceName)}'`);
    const expected = createHmac('sha256', Buffer.from(token, 'utf8')).update(String(outer.payload), 'utf8').digest();
    const given = Buffer.from(String(outer.signature), 'base64');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      return refuse('bad signature', 'CorruptedFrameException', 'Signature is not valid (invalid token?)');
    }
    votes.push({ version: 2, service: String(payload.serviceName), username: String(payload.username), address: String(payload.address), timestamp: String(payload.timestamp) });
    if (behaviour !== 'no-answer') socket.end('{"status":"ok"}\r\n');
  };

  const server = net.createServer((socket) => {
    accepted += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    if (behaviour === 'silent') return;
    if (behaviour === 'garbage') return void socket.end('HTTP/1.1 400 Bad Request\r\n\r\n');
    const challenge = randomBytes(16).toString('hex');
    const greeting = options.kind === 'votifier' ? 'VOTIFIER 1.9\n' : `VOTIFIER 2 ${challenge}\n`;
    // An answer sent before any vote goes in the greeting's write, so that it arrives with it.
    socket.write(behaviour === 'answer-first' ? `${greeting}{"status":"ok"}\r\n` : greeting);
    if (behaviour === 'close-after-greeting') return void socket.destroy();
    let buffered = Buffer.alloc(0);
    let done = false;
    socket.on('data', (chunk: Buffer) => {
      if (done) return;
      buffered = Buffer.concat([buffered, chunk]);
      const v2 = options.kind === 'nuvotifier' && buffered.length >= 2 && buffered.readUInt16BE(0) === 0x733a;
      if (v2 && buffered.length >= 4 && buffered.length >= 4 + buffered.readUInt16BE(2)) {
        done = true;
        takeV2(socket, buffered.toString('utf8', 4, 4 + buffered.readUInt16BE(2)), challenge);
      } else if (!v2 && buffered.length >= 256) {
        done = true;
        takeV1(socket, buffered.subarray(0, 256));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, options.host ?? '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    votes,
    refusals,
    publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    token: tokens.default!,
    connections: () => accepted,
    open: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * A filtered port on loopback: a listening socket whose accept queue is full and never drained
 * (its thread blocked), so the kernel drops new SYNs and a connect waits, as behind a firewall
 * that drops packets. No packet leaves the machine.
 */
export async function startFilteredPort(): Promise<{ port: number; close(): Promise<void> }> {
  const { Worker } = await import('node:worker_threads');
  const release = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(
    `const { workerData, parentPort } = require('node:worker_threads');
     const server = require('node:net').createServer();
     server.listen({ host: '127.0.0.1', port: 0, backlog: 1 }, () => {
       parentPort.postMessage(server.address().port);
       Atomics.wait(workerData, 0, 0);
     });`,
    { eval: true, workerData: release },
  );
  const port = await new Promise<number>((resolve) => worker.once('message', resolve));
  // Fill the accept queue (backlog + 1 connections on Linux): the next SYN is dropped.
  const fillers: net.Socket[] = [];
  for (let i = 0; i < 2; i++) {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.on('error', () => {});
    fillers.push(socket);
    await new Promise((resolve) => socket.once('connect', resolve));
  }
  return {
    port,
    async close() {
      for (const socket of fillers) socket.destroy();
      Atomics.store(release, 0, 1);
      Atomics.notify(release, 0);
      await worker.terminate();
    },
  };
}
