/**
 * Votifier test votes: protocol 1 (Votifier, RSA) and protocol 2 (NuVotifier, a token), as the
 * receivers implement them: Votifier 1.9's `VoteReceiver` (vexsoftware/votifier) and
 * NuVotifier's `VotifierGreetingHandler`, `VotifierProtocolDifferentiator`,
 * `VotifierProtocol1Decoder`, `VotifierProtocol2Decoder` and `VoteInboundHandler`
 * (NuVotifier/NuVotifier, common/…/net/protocol).
 *
 *   S→C greeting  `VOTIFIER <version>\n`: `VOTIFIER 1.9` from Votifier; `VOTIFIER 2 <challenge>`
 *                 from NuVotifier, which then takes a vote of either protocol (unless its
 *                 `disable-v1-protocol` is set), but answers a v1 vote, taken or not, by
 *                 closing: only a v2 vote to it can be told taken from refused. So a test vote
 *                 follows the greeting (a token to NuVotifier, a key to Votifier), never a guess.
 *   v1  C→S       256 bytes: `VOTE\n<service>\n<username>\n<address>\n<timestamp>\n` encrypted
 *                 with the server's 2048-bit RSA public key, PKCS#1 v1.5 (Java's "RSA" cipher).
 *                 No answer: the server closes once it has read the block. Votifier 1.9 leaves
 *                 the connection open when it cannot decrypt it; NuVotifier closes it either way.
 *   v2  C→S       0x733a (u16 BE), the message's length (u16 BE), the message: JSON
 *                 `{"payload": "<JSON of serviceName, username, address, timestamp, challenge>",
 *                 "signature": "<base64 HMAC-SHA256 of payload, keyed with the token's UTF-8>"}`.
 *                 NuVotifier reads frames of at most 1,024 bytes, header included.
 *       S→C       `{"status":"ok"}` or `{"status":"error","cause":"<exception class>",
 *                 "error":"<message>"}`, then `\r\n`, then it closes.
 *
 * The exchange runs on a connection it is handed (it never opens or closes one), under that
 * connection's deadline, with every length capped: the greeting line, the answer.
 */
import { createHmac, createPublicKey, publicEncrypt, constants, type KeyObject } from 'node:crypto';
import { ProbeError, type VoteFailure } from '../core/errors.js';
import { isObject } from '../core/json.js';
import { cleanServerText } from '../motd/index.js';
import { invalid, type StreamDecoderResult } from './codec.js';
import { roundLatency } from './target.js';
import type { StreamConnection } from './transport.js';

/** Bytes of a greeting line at most: NuVotifier's is about 40 (its challenge is 26 base-32 digits). */
export const MAX_GREETING_BYTES = 256;
/** Bytes of a v2 answer at most: NuVotifier's error answers are a class name and one sentence. */
export const MAX_ANSWER_BYTES = 4096;
/** NuVotifier's frame decoder refuses frames over 1,024 bytes, its 4-byte header included. */
export const MAX_V2_MESSAGE_BYTES = 1024 - 4;
/** The 2-byte magic before a v2 message (NuVotifier's PROTOCOL_2_MAGIC). */
export const V2_MAGIC = 0x733a;
/** RSA modulus of a Votifier key pair, in bits: Votifier reads exactly 256 bytes. */
export const V1_KEY_BITS = 2048;
/** Characters of the server's own cause and error kept in an answer. */
const MAX_SERVER_TEXT = 200;

const GREETING_PREFIX = Buffer.from('VOTIFIER ', 'latin1');

/** The fields of one vote, as a server list sends them. */
export interface Vote {
  service: string;
  username: string;
  /** The voter's address, as text (Votifier passes it on, unchecked). */
  address: string;
  /** Milliseconds since the epoch. */
  timestamp: number;
}

/** What authenticates the vote: a NuVotifier token (v2) or a Votifier public key (v1). */
export type VoteSecret = { kind: 'token'; token: string } | { kind: 'key'; key: KeyObject };

export type Greeting = { version: 1 } | { version: 2; challenge: string };

/** What the server answered a v2 vote (or, unasked, a v1 one), its texts cleaned and capped. */
export interface ServerAnswer {
  status: 'ok' | 'error';
  cause: string | null;
  error: string | null;
}

/** How one exchange ended. `failure` is null when the vote was taken. */
export interface VoteExchange {
  /** The protocol the server greeted with; null without a Votifier greeting. */
  version: 1 | 2 | null;
  failure: Exclude<VoteFailure, 'connection_refused'> | null;
  /** A sentence for `error`: what happened, never a secret. */
  detail: string | null;
  serverStatus: ServerAnswer | null;
  /** From the greeting's arrival to the vote's answer (or close). */
  latencyMs: number | null;
}

/** A public key that is not a Votifier key: `bad_key` before anything is sent. */
export class VoteKeyError extends Error {}

/**
 * The server's public key, as PEM (`-----BEGIN PUBLIC KEY-----`) or as what Votifier's
 * `rsa/public.key` holds: the bare base64 of the X.509 SubjectPublicKeyInfo DER. Only an RSA
 * key of 2048 bits is a Votifier key.
 */
export function parsePublicKey(text: string): KeyObject {
  const trimmed = text.trim();
  let key: KeyObject;
  try {
    if (trimmed.startsWith('-----BEGIN')) key = createPublicKey({ key: trimmed, format: 'pem' });
    else if (/^[A-Za-z0-9+/\s]+={0,2}$/.test(trimmed)) key = createPublicKey({ key: Buffer.from(trimmed, 'base64'), format: 'der', type: 'spki' });
    else throw new VoteKeyError('not PEM or base64');
  } catch {
    throw new VoteKeyError('The public key is neither a PEM public key nor the base64 of Votifier\'s public.key.');
  }
  if (key.asymmetricKeyType !== 'rsa' || key.asymmetricKeyDetails?.modulusLength !== V1_KEY_BITS) {
    throw new VoteKeyError('The public key is not a 2048-bit RSA key, which is what Votifier uses.');
  }
  return key;
}

/** A greeting line (without its line end), or `invalid_response` when it is not Votifier's. */
export function parseGreeting(line: string): Greeting {
  const words = line.split(' ');
  if (words[0] !== 'VOTIFIER' || words.length < 2) throw invalid('not a Votifier greeting');
  // NuVotifier: `VOTIFIER 2 <challenge>`; anything else after VOTIFIER is a version of Votifier 1.
  if (words[1] === '2' && words.length === 3 && /^[\x21-\x7e]{1,128}$/.test(words[2]!)) return { version: 2, challenge: words[2]! };
  return { version: 1 };
}

/**
 * Stream decoder of the greeting: one line starting `VOTIFIER `, ended by `\n` (`\r\n` from a
 * Votifier on Windows) within MAX_GREETING_BYTES. Bytes that cannot start it are refused as
 * soon as they arrive (an HTTP or Minecraft server, say).
 */
export function readGreeting(buffered: Buffer): StreamDecoderResult<Greeting> {
  const prefix = Math.min(buffered.length, GREETING_PREFIX.length);
  if (buffered.compare(GREETING_PREFIX, 0, prefix, 0, prefix) !== 0) throw invalid('not a Votifier greeting');
  const end = buffered.indexOf(0x0a);
  if (end < 0) {
    if (buffered.length >= MAX_GREETING_BYTES) throw invalid('greeting line too long');
    return undefined;
  }
  if (end >= MAX_GREETING_BYTES) throw invalid('greeting line too long');
  const line = buffered.toString('latin1', 0, end).replace(/\r$/, '');
  return { value: parseGreeting(line), consumed: end + 1 };
}

/** The clear text of a v1 vote block. Fields hold no line end (the request's schema sees to it). */
export function encodeVoteV1Text(vote: Vote): Buffer {
  return Buffer.from(`VOTE\n${vote.service}\n${vote.username}\n${vote.address}\n${vote.timestamp}\n`, 'utf8');
}

/** The 256-byte v1 block: the clear text under the server's key, PKCS#1 v1.5 (random padding: never twice the same). */
export function encodeVoteV1(vote: Vote, key: KeyObject): Buffer {
  return publicEncrypt({ key, padding: constants.RSA_PKCS1_PADDING }, encodeVoteV1Text(vote));
}

/** The v2 payload: the JSON text that is signed, with the greeting's challenge. */
export function voteV2Payload(vote: Vote, challenge: string): string {
  return JSON.stringify({ serviceName: vote.service, username: vote.username, address: vote.address, timestamp: vote.timestamp, challenge });
}

/** A v2 vote on the wire: magic, length, and the signed message. */
export function encodeVoteV2(vote: Vote, challenge: string, token: string): Buffer {
  const payload = voteV2Payload(vote, challenge);
  const signature = createHmac('sha256', Buffer.from(token, 'utf8')).update(payload, 'utf8').digest('base64');
  const message = Buffer.from(JSON.stringify({ payload, signature }), 'utf8');
  if (message.length > MAX_V2_MESSAGE_BYTES) throw new RangeError(`a v2 message of ${message.length} bytes exceeds NuVotifier's ${MAX_V2_MESSAGE_BYTES}`);
  const header = Buffer.allocUnsafe(4);
  header.writeUInt16BE(V2_MAGIC, 0);
  header.writeUInt16BE(message.length, 2);
  return Buffer.concat([header, message]);
}

/** A server's answer object, or `invalid_response` when it is not one. */
export function parseServerAnswer(text: string): ServerAnswer {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ProbeError('invalid_response', { cause: error });
  }
  if (!isObject(json) || (json.status !== 'ok' && json.status !== 'error')) throw invalid('not a Votifier answer');
  const text_ = (value: unknown) => (typeof value === 'string' ? cleanServerText(value, MAX_SERVER_TEXT) || null : null);
  return { status: json.status, cause: text_(json.cause), error: text_(json.error) };
}

/**
 * Stream decoder of the answer: a line (NuVotifier ends it with `\r\n`), or a whole JSON
 * object without a line end, within MAX_ANSWER_BYTES.
 */
export function readServerAnswer(buffered: Buffer): StreamDecoderResult<ServerAnswer> {
  const end = buffered.indexOf(0x0a);
  if (end >= 0 && end < MAX_ANSWER_BYTES) return { value: parseServerAnswer(buffered.toString('utf8', 0, end)), consumed: end + 1 };
  if (buffered.length >= MAX_ANSWER_BYTES) throw invalid('answer too long');
  if (buffered[buffered.length - 1] === 0x7d) {
    try {
      return { value: parseServerAnswer(buffered.toString('utf8')), consumed: buffered.length };
    } catch {
      // Not whole yet: a `}` inside a string.
    }
  }
  return undefined;
}

type Read<T> = { ok: true; value: T } | { ok: false; error: ProbeError };

function settled<T>(read: Promise<T>): Promise<Read<T>> {
  return read.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error: error instanceof ProbeError ? error : new ProbeError('invalid_response', { cause: error }) }),
  );
}

/** One turn of the event loop: socket events already received are handled by then. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/**
 * How long a v1 vote waits after the greeting for a close that came right behind it: a tenth of
 * a second, nothing beside a test vote's deadline.
 */
export const V1_CLOSE_GRACE_MS = 100;

const NO_GREETING: Record<string, string> = {
  timeout: 'Nothing greeted as Votifier before the deadline.',
  connection_closed: 'The server closed the connection without a Votifier greeting.',
};

function ended(version: 1 | 2 | null, failure: VoteExchange['failure'], detail: string | null, extra: Partial<VoteExchange> = {}): VoteExchange {
  return { version, failure, detail, serverStatus: null, latencyMs: null, ...extra };
}

/** An answer the server sent: taken, or refused with its own cause (`bad_token` when NuVotifier names the signature or token). */
function answered(version: 1 | 2, answer: ServerAnswer, latencyMs: number): VoteExchange {
  if (answer.status === 'ok') return ended(version, null, null, { serverStatus: answer, latencyMs });
  const said = `${answer.cause ?? ''} ${answer.error ?? ''}`;
  const failure = version === 2 && /signature|token/i.test(said) ? 'bad_token' : 'server_error';
  const detail = failure === 'bad_token' ? 'The server refused the vote\'s signature: the token is not the one it holds for this service.' : 'The server refused the vote: see server_status.';
  return ended(version, failure, detail, { serverStatus: answer, latencyMs });
}

/** How the exchange ends once the vote is written and the server closes or the deadline passes without an answer. */
function unanswered(version: 1 | 2, error: ProbeError, latencyMs: number): VoteExchange {
  if (version === 1) {
    // Votifier v1 answers nothing: closing the connection once the block is read is how it takes a vote.
    if (error.code === 'connection_closed') return ended(version, null, null, { latencyMs });
    if (error.code === 'timeout') {
      return ended(version, 'bad_key', 'The server kept the connection open after the vote, as Votifier does when it cannot decrypt it: the public key is most likely not this server\'s.');
    }
  } else {
    if (error.code === 'timeout') return ended(version, 'timeout', 'The server did not answer the vote before the deadline.');
    if (error.code === 'connection_closed') return ended(version, 'server_error', 'The server closed the connection without answering the vote.', { latencyMs });
  }
  return ended(version, 'server_error', 'The server answered the vote with something that is not a Votifier answer.', { latencyMs });
}

/** A server that answered, or closed (or a deadline that passed), before the vote was written. */
function beforeTheVote(version: 1 | 2, early: Read<ServerAnswer>): VoteExchange {
  if (early.ok) return ended(version, 'server_error', 'The server answered before the vote was sent.');
  const { error } = early;
  return error.code === 'timeout'
    ? ended(version, 'timeout', 'The deadline passed before the vote could be sent.')
    : ended(version, 'server_error', 'The server closed the connection after its greeting, before the vote was sent.');
}

/** The vote on the wire for this server; null when the secret does not fit the protocol it greeted with. */
function votePacket(vote: Vote, secret: VoteSecret, greeting: Greeting): Buffer | null {
  if (greeting.version === 2) return secret.kind === 'token' ? encodeVoteV2(vote, greeting.challenge, secret.token) : null;
  return secret.kind === 'key' ? encodeVoteV1(vote, secret.key) : null;
}

const WRONG_VERSION = {
  1: 'The server speaks Votifier v1, which takes a public key, not a token: send its public key instead.',
  2:
    'The server speaks NuVotifier v2: send its token. It takes v1 votes too, but closes the connection whether it could ' +
    'decrypt them or not, so a vote with the public key could not tell you whether it was taken.',
} as const;

/**
 * Sends one vote on a connection it is handed: reads the greeting, checks that the secret fits
 * its protocol (a token for NuVotifier v2, a key for Votifier v1), writes the vote and reads the answer or the close. Never throws: every end is a VoteExchange.
 */
export async function exchangeVote(connection: StreamConnection, vote: Vote, secret: VoteSecret, now: () => number): Promise<VoteExchange> {
  const greeted = await settled(connection.read(readGreeting));
  if (!greeted.ok) return ended(null, 'not_votifier', NO_GREETING[greeted.error.code] ?? 'The server did not greet as Votifier does.');
  const greeting = greeted.value;
  const packet = votePacket(vote, secret, greeting);
  if (packet === null) return ended(greeting.version, 'wrong_version', WRONG_VERSION[greeting.version]);
  // Listen for the answer (or the close) from the greeting on: whatever comes before the vote is
  // written (an answer, a close) ends the exchange unsent. Votifier v1 answers nothing, so a
  // close is the only sign that a server will not read the block, and only when it comes first:
  // a close sent right behind a v1 greeting gets V1_CLOSE_GRACE_MS to arrive, and then one turn
  // of the event loop to be reported, before the block is written.
  const seen: { read: Read<ServerAnswer> | null } = { read: null };
  const answer = settled(connection.read(readServerAnswer)).then((read) => (seen.read = read));
  if (greeting.version === 1) await delay(V1_CLOSE_GRACE_MS);
  await nextTurn();
  if (seen.read !== null) return beforeTheVote(greeting.version, seen.read);
  const written = now();
  connection.write(packet);
  const result = await answer;
  const latencyMs = roundLatency(now() - written);
  return result.ok ? answered(greeting.version, result.value, latencyMs) : unanswered(greeting.version, result.error, latencyMs);
}
