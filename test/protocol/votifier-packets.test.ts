/**
 * The Votifier client's packets against byte fixtures, both ways: the votes it writes (v2 to the
 * byte, its signature checked with OpenSSL's HMAC; v1 decrypted back with the receiver's private
 * key), the greetings and answers it reads, every length capped; and the public keys it takes.
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ProbeError } from '../../src/core/errors.js';
import {
  MAX_ANSWER_BYTES,
  MAX_GREETING_BYTES,
  encodeVoteV1,
  encodeVoteV1Text,
  encodeVoteV2,
  parsePublicKey,
  readGreeting,
  readServerAnswer,
  VoteKeyError,
} from '../../src/protocol/votifier.js';
import { decryptVoteBlock } from '../support/votifier.js';

const vote = { service: 'Observer', username: 'Steve', address: '203.0.113.7', timestamp: 1_700_000_000_000 };
const bytes = (hex: string) => Buffer.from(hex.replace(/\s+/g, ''), 'hex');

describe('v2 vote (NuVotifier)', () => {
  // `printf '%s' "$payload" | openssl dgst -sha256 -hmac tok3n -binary | base64`
  const signature = 'QHRVIVshKO+lzKHnZCXdjCwjHrXDet1xDs+VXcZPgRY=';
  const payload = '{"serviceName":"Observer","username":"Steve","address":"203.0.113.7","timestamp":1700000000000,"challenge":"c0ffee"}';
  const message = JSON.stringify({ payload, signature });

  it('is the magic 0x733a, the message length (u16 BE), then the signed message', () => {
    const wire = encodeVoteV2(vote, 'c0ffee', 'tok3n');
    expect(wire.subarray(0, 4)).toEqual(bytes('733a 00cf'));
    expect(message.length).toBe(0xcf);
    expect(wire.subarray(4).toString('utf8')).toBe(message);
  });

  it('refuses a message NuVotifier\'s 1,024-byte frame could not hold', () => {
    expect(() => encodeVoteV2({ ...vote, service: 'x'.repeat(1000) }, 'c0ffee', 'tok3n')).toThrow(RangeError);
  });
});

describe('v1 vote (Votifier)', () => {
  it('is the fields on lines after VOTE, encrypted to 256 bytes with the server\'s key, new padding each time', () => {
    expect(encodeVoteV1Text(vote)).toEqual(bytes('564f54450a 4f627365727665720a 53746576650a 3230332e302e3131332e370a 313730303030303030303030300a'));
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const first = encodeVoteV1(vote, publicKey);
    const second = encodeVoteV1(vote, publicKey);
    expect(first).toHaveLength(256);
    expect(first.equals(second)).toBe(false);
    expect(decryptVoteBlock(first, privateKey)?.toString('latin1')).toBe('VOTE\nObserver\nSteve\n203.0.113.7\n1700000000000\n');
    expect(decryptVoteBlock(first, generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey)).toBeNull();
  });
});

describe('greetings', () => {
  it.each([
    ['VOTIFIER 1.9\n', { version: 1 }],
    ['VOTIFIER 1.9\r\n', { version: 1 }],
    ['VOTIFIER 2 k4lb6ul3t3cbq9il0u1nq3dqhm\n', { version: 2, challenge: 'k4lb6ul3t3cbq9il0u1nq3dqhm' }],
    ['VOTIFIER 2\n', { version: 1 }],
  ])('%j reads as %j', (text, greeting) => {
    const wire = Buffer.from(`${text}rest`, 'latin1');
    expect(readGreeting(wire)).toEqual({ value: greeting, consumed: text.length });
  });

  it('waits for the line end, and refuses what cannot be a greeting as soon as it arrives', () => {
    expect(readGreeting(Buffer.from('VOTIF'))).toBeUndefined();
    expect(readGreeting(Buffer.from('VOTIFIER 2 abc'))).toBeUndefined();
    for (const wire of [Buffer.from('HTTP/1.1 400'), bytes('0f00'), Buffer.from('VOTIFIED 1\n'), Buffer.from('VOTIFIER\n')]) {
      expect(() => readGreeting(wire), wire.toString('hex')).toThrow(ProbeError);
    }
  });

  it(`refuses a line longer than ${MAX_GREETING_BYTES} bytes`, () => {
    expect(() => readGreeting(Buffer.from(`VOTIFIER ${'9'.repeat(MAX_GREETING_BYTES)}`))).toThrow(/invalid response/);
    expect(() => readGreeting(Buffer.from(`VOTIFIER ${'9'.repeat(MAX_GREETING_BYTES)}\n`))).toThrow(/invalid response/);
  });
});

describe('answers', () => {
  it('reads NuVotifier\'s ok and error lines, and a whole JSON object without a line end', () => {
    expect(readServerAnswer(Buffer.from('{"status":"ok"}\r\n'))).toEqual({ value: { status: 'ok', cause: null, error: null }, consumed: 17 });
    const error = '{"status":"error","cause":"CorruptedFrameException","error":"Signature is not valid (invalid token?)"}\r\n';
    expect(readServerAnswer(Buffer.from(error))).toEqual({
      value: { status: 'error', cause: 'CorruptedFrameException', error: 'Signature is not valid (invalid token?)' },
      consumed: error.length,
    });
    expect(readServerAnswer(Buffer.from('{"status":"ok"}'))).toEqual({ value: { status: 'ok', cause: null, error: null }, consumed: 15 });
    expect(readServerAnswer(Buffer.from('{"status":"error","error":"a}'))).toBeUndefined();
  });

  it('cleans and caps the server\'s own texts', () => {
    const wire = Buffer.from(`${JSON.stringify({ status: 'error', cause: 'Evil\u001b[31m\u0007', error: 'x'.repeat(1000) })}\n`);
    const answer = readServerAnswer(wire) as { value: { cause: string; error: string } };
    expect(answer.value.cause).toBe('Evil[31m');
    expect(answer.value.error.length).toBeLessThanOrEqual(200);
  });

  it(`refuses what is not an answer, and a line over ${MAX_ANSWER_BYTES} bytes`, () => {
    for (const text of ['hello\n', '{"status":"maybe"}\n', '[1]\n', `${' '.repeat(MAX_ANSWER_BYTES)}`]) {
      expect(() => readServerAnswer(Buffer.from(text)), text.slice(0, 20)).toThrow(ProbeError);
    }
  });
});

describe('public keys', () => {
  const rsa = (bits: number) => generateKeyPairSync('rsa', { modulusLength: bits }).publicKey;
  const key = rsa(2048);
  const base64 = key.export({ type: 'spki', format: 'der' }).toString('base64');

  it('takes PEM and the base64 of Votifier\'s public.key, wrapped or not', () => {
    for (const text of [key.export({ type: 'spki', format: 'pem' }).toString(), base64, `  ${base64.replace(/(.{64})/g, '$1\n')}\n`]) {
      expect(parsePublicKey(text).export({ type: 'spki', format: 'der' }).toString('base64')).toBe(base64);
    }
  });

  it('refuses anything but a 2048-bit RSA public key', () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
    for (const text of ['', 'not a key', base64.slice(0, 100), rsa(1024).export({ type: 'spki', format: 'pem' }).toString(), ec, '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----']) {
      expect(() => parsePublicKey(text), text.slice(0, 30)).toThrow(VoteKeyError);
    }
  });
});
