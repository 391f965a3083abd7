/**
 * POST /api/v1/vote against Votifier and NuVotifier receivers on loopback (test/support/votifier.ts):
 * votes arrive with the fields sent, wrong secrets are reported as such, receivers that do not
 * greet or close early are typed, a closed port and a filtered one answer alike after the
 * deadline, the guard and the limits hold, and no secret or username reaches the log.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from '../../src/http/rate-limit.js';
import { buildApp } from '../../src/http/app.js';
import { createVoteService } from '../../src/vote/service.js';
import { freePort } from '../../scripts/ports.mjs';
import { logCapture, testConfig } from '../support/app.js';
import { openApiValidator } from '../support/openapi.js';
import { startFilteredPort, startVotifierReceiver, type ReceiverOptions, type VotifierReceiver } from '../support/votifier.js';

/** Short enough for the tests that wait for it, long enough for a busy machine's loopback. */
const DEADLINE_MS = 1500;

async function appWith(env: Record<string, string> = {}, logger?: { stream: NodeJS.WritableStream }) {
  const config = testConfig({ PING_TIMEOUT_MS: String(DEADLINE_MS), RATE_LIMIT_VOTE: '1000', ...env });
  const counter = new MemoryRateLimitStore();
  const app = await buildApp({ config, votes: createVoteService(config, counter), ...(logger ? { logger: { level: 'debug', stream: logger.stream } } : { logger: false }) });
  app.addHook('onClose', async () => counter.close());
  await app.ready();
  return app;
}

type App = Awaited<ReturnType<typeof appWith>>;
let app: App;
let validate: Awaited<ReturnType<typeof openApiValidator>>;
const receivers: VotifierReceiver[] = [];

async function receiver(options: ReceiverOptions): Promise<VotifierReceiver> {
  const started = await startVotifierReceiver(options);
  receivers.push(started);
  return started;
}

beforeAll(async () => {
  app = await appWith();
  validate = await openApiValidator(app);
});
afterAll(async () => {
  await app.close();
  await Promise.all(receivers.map((r) => r.close()));
});

const vote = (body: Record<string, unknown>, on: App = app, client = '203.0.113.50') =>
  on.inject({ method: 'POST', url: '/api/v1/vote', headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body), remoteAddress: client });

/** Resolves once `check` holds, or after 5 s (the test's expectation then says what is missing). */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 250 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
}

describe('votes that arrive', () => {
  it('a v2 vote reaches NuVotifier with the fields sent, and its ok is shown', async () => {
    const nu = await receiver({ kind: 'nuvotifier' });
    const res = await vote({ host: '127.0.0.1', port: nu.port, username: 'Steve', service: 'My List', address: '198.51.100.4', timestamp: 1_700_000_000_123, token: nu.token });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json();
    expect(validate('VoteAnswer', body)).toEqual([]);
    expect(body).toMatchObject({ sent: true, version: 2, error_code: null, error: null, server_status: { status: 'ok', cause: null, error: null } });
    expect(body.latency_ms).toBeGreaterThanOrEqual(0);
    expect(nu.votes).toEqual([{ version: 2, service: 'My List', username: 'Steve', address: '198.51.100.4', timestamp: '1700000000123' }]);
  });

  it('defaults: port 8192 aside, the service is Observer, the address 127.0.0.1, the timestamp now', async () => {
    const nu = await receiver({ kind: 'nuvotifier' });
    const before = Date.now();
    expect((await vote({ host: 'mc.observer.test', port: nu.port, username: 'Alex', token: nu.token })).json().sent).toBe(true);
    const [got] = nu.votes;
    expect(got).toMatchObject({ service: 'Observer', username: 'Alex', address: '127.0.0.1' });
    expect(Number(got!.timestamp)).toBeGreaterThanOrEqual(before);
    expect(Number(got!.timestamp)).toBeLessThanOrEqual(Date.now());
  });

  it('a v1 vote reaches Votifier with the key as public.key holds it, and as PEM', async () => {
    const v1 = await receiver({ kind: 'votifier' });
    for (const key of [v1.publicKey, v1.publicKeyPem]) {
      const res = await vote({ host: '127.0.0.1', port: v1.port, username: 'Steve', public_key: key, timestamp: 42 });
      expect(res.json()).toEqual({ sent: true, version: 1, latency_ms: expect.any(Number), error_code: null, error: null, server_status: null });
    }
    expect(v1.votes).toEqual([0, 1].map(() => ({ version: 1, service: 'Observer', username: 'Steve', address: '127.0.0.1', timestamp: '42' })));
  });

  it('a name with addresses of both families: a refused IPv4 address is followed by the IPv6 one', async () => {
    const nu = await receiver({ kind: 'nuvotifier', host: '::1' });
    const res = await vote({ host: 'dual.observer.test', port: nu.port, username: 'Steve', token: nu.token });
    expect(res.json()).toMatchObject({ sent: true, version: 2 });
    expect(nu.votes).toHaveLength(1);
  });

});

describe('votes the server refuses', () => {
  it('a wrong token is bad_token, with the server\'s own cause', async () => {
    const nu = await receiver({ kind: 'nuvotifier' });
    const body = (await vote({ host: '127.0.0.1', port: nu.port, username: 'Steve', token: 'not-the-token' })).json();
    expect(validate('VoteAnswer', body)).toEqual([]);
    expect(body).toMatchObject({
      sent: false,
      version: 2,
      error_code: 'bad_token',
      server_status: { status: 'error', cause: 'CorruptedFrameException', error: 'Signature is not valid (invalid token?)' },
    });
    expect(JSON.stringify(body)).not.toContain('not-the-token');
    expect(nu.votes).toEqual([]);
    expect(nu.refusals).toEqual(['bad signature']);
  });

  it('a block Votifier cannot decrypt (another server\'s key) is bad_key, and the connection is ended', async () => {
    const v1 = await receiver({ kind: 'votifier' });
    const other = await receiver({ kind: 'votifier' });
    const body = (await vote({ host: '127.0.0.1', port: v1.port, username: 'Steve', public_key: other.publicKey })).json();
    expect(body).toMatchObject({ sent: false, version: 1, error_code: 'bad_key', latency_ms: null });
    expect(body.error).toContain('cannot decrypt');
    expect(v1.refusals).toEqual(['cannot decrypt']);
    await until(() => v1.open() === 0);
    expect(v1.open()).toBe(0);
  });

  it('a public key for NuVotifier (a v2 greeting) is wrong_version, and nothing is sent: a v1 block to it would not say whether it was taken', async () => {
    const nu = await receiver({ kind: 'nuvotifier' });
    const body = (await vote({ host: '127.0.0.1', port: nu.port, username: 'Steve', public_key: nu.publicKey })).json();
    expect(body).toMatchObject({ sent: false, version: 2, error_code: 'wrong_version', latency_ms: null });
    expect(body.error).toContain('token');
    await until(() => nu.open() === 0);
    expect([nu.votes, nu.refusals, nu.open()]).toEqual([[], [], 0]);
  });

  it('a token for a Votifier v1 server is wrong_version, and nothing is sent', async () => {
    const v1 = await receiver({ kind: 'votifier' });
    const body = (await vote({ host: '127.0.0.1', port: v1.port, username: 'Steve', token: 'abc' })).json();
    expect(body).toMatchObject({ sent: false, version: 1, error_code: 'wrong_version', latency_ms: null });
    await until(() => v1.open() === 0);
    expect([v1.votes, v1.refusals, v1.open()]).toEqual([[], [], 0]);
  });

  it('a key that is not a 2048-bit RSA key is bad_key before any connection', async () => {
    const v1 = await receiver({ kind: 'votifier' });
    for (const key of ['not a key', 'MIIBIjANBgkq']) {
      expect((await vote({ host: '127.0.0.1', port: v1.port, username: 'Steve', public_key: key })).json()).toMatchObject({ sent: false, version: null, error_code: 'bad_key' });
    }
    expect(v1.connections()).toBe(0);
  });
});

describe('servers that are not Votifiers, or do not answer', () => {
  it.each([
    ['never greets', 'silent', 'not_votifier', null],
    ['greets as something else', 'garbage', 'not_votifier', null],
    ['closes after the greeting', 'close-after-greeting', 'server_error', 2],
    ['answers before any vote', 'answer-first', 'server_error', 2],
    ['never answers the vote', 'no-answer', 'timeout', 2],
  ] as const)('a server that %s: %s', async (_what, behaviour, code, version) => {
    const nu = await receiver({ kind: 'nuvotifier', behaviour });
    const body = (await vote({ host: '127.0.0.1', port: nu.port, username: 'Steve', token: nu.token })).json();
    expect(validate('VoteAnswer', body)).toEqual([]);
    expect(body).toMatchObject({ sent: false, version, error_code: code });
    await until(() => nu.open() === 0);
    expect(nu.open()).toBe(0);
  });

  it('a v1 vote to a server that closes after its greeting is server_error, not taken', async () => {
    const v1 = await receiver({ kind: 'votifier', behaviour: 'close-after-greeting' });
    expect((await vote({ host: '127.0.0.1', port: v1.port, username: 'Steve', public_key: v1.publicKey })).json()).toMatchObject({ sent: false, version: 1, error_code: 'server_error' });
  });

  it('a closed port and a filtered one answer alike, once the deadline has passed', async () => {
    const filtered = await startFilteredPort();
    try {
      const answers = await Promise.all(
        [await freePort(), filtered.port].map(async (port) => {
          const started = performance.now();
          const res = await vote({ host: '127.0.0.1', port, username: 'Steve', token: 't' });
          return { body: res.json(), elapsed: performance.now() - started };
        }),
      );
      const [closed, dropped] = answers;
      expect(closed!.body).toEqual({ sent: false, version: null, latency_ms: null, error_code: 'connection_refused', error: expect.any(String), server_status: null });
      expect(dropped!.body).toEqual(closed!.body);
      // A timer never fires early: the refused connection waited for the deadline like the dropped one.
      expect(closed!.elapsed).toBeGreaterThanOrEqual(DEADLINE_MS - 1);
    } finally {
      await filtered.close();
    }
  });
});

describe('requests refused before anything is sent', () => {
  it.each([
    ['both secrets', { token: 't', public_key: 'k' }, 'invalid_parameter'],
    ['no secret', {}, 'invalid_parameter'],
    ['a name that is not a Minecraft name', { token: 't', username: 'Steve Jobs' }, 'invalid_parameter'],
    ['a line end in the service', { token: 't', service: 'a\nb' }, 'invalid_parameter'],
    ['an unknown field', { token: 't', secret: 'x' }, 'invalid_parameter'],
    ['a port in the host', { token: 't', host: '127.0.0.1:8192' }, 'invalid_address'],
    ['a malformed host', { token: 't', host: 'a..b' }, 'invalid_address'],
  ])('%s: 400', async (_what, fields, code) => {
    const res = await vote({ host: '127.0.0.1', username: 'Steve', ...fields });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ status: 'error', error: code });
  });

  it('a body that is not JSON: 415, or 400 when it says JSON and is not', async () => {
    const text = await app.inject({ method: 'POST', url: '/api/v1/vote', headers: { 'content-type': 'text/plain' }, payload: 'host=x' });
    expect([text.statusCode, text.json().error]).toEqual([415, 'unsupported_media_type']);
    const broken = await app.inject({ method: 'POST', url: '/api/v1/vote', headers: { 'content-type': 'application/json' }, payload: '{"host":' });
    expect([broken.statusCode, broken.json().error]).toEqual([400, 'invalid_body']);
  });

  it('a name without records is a 404', async () => {
    const res = await vote({ host: 'missing.observer.test', username: 'Steve', token: 't' });
    expect([res.statusCode, res.json().error]).toEqual([404, 'host_not_found']);
  });

  it('with the guard on, a loopback target is refused and never contacted, by IP or by name', async () => {
    const guarded = await appWith({ TARGET_ALLOWLIST: '' });
    const nu = await receiver({ kind: 'nuvotifier' });
    try {
      for (const host of ['127.0.0.1', 'mc.observer.test', '::ffff:127.0.0.1', 'dual.observer.test']) {
        const res = await vote({ host, port: nu.port, username: 'Steve', token: nu.token }, guarded);
        expect([res.statusCode, res.json().error], host).toEqual([400, 'target_refused']);
      }
      expect(nu.connections()).toBe(0);
    } finally {
      await guarded.close();
    }
  });
});

describe('limits', () => {
  it('20 votes from one client in a minute: RATE_LIMIT_VOTE (10 by default) are sent, the rest are 429', async () => {
    const limited = await appWith({ RATE_LIMIT_VOTE: '' });
    const nu = await receiver({ kind: 'nuvotifier' });
    try {
      const answers = [];
      for (let i = 0; i < 20; i++) answers.push(await vote({ host: '127.0.0.1', port: nu.port, username: 'Steve', token: nu.token }, limited));
      expect(answers.map((r) => r.statusCode)).toEqual([...Array(10).fill(200), ...Array(10).fill(429)]);
      expect(answers[0]!.headers['ratelimit-policy']).toBe('"vote";q=10;w=60');
      expect(answers[19]!.json()).toMatchObject({ status: 'error', error: 'rate_limited' });
      expect(Number(answers[19]!.headers['retry-after'])).toBeGreaterThan(0);
      expect(nu.votes).toHaveLength(10);
      // Another client has its own minute.
      expect((await vote({ host: '127.0.0.1', port: nu.port, username: 'Steve', token: nu.token }, limited, '203.0.113.99')).statusCode).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('a target IP\'s pings of the minute (TARGET_PINGS_PER_MINUTE) bound its votes, whoever sends them', async () => {
    const budget = await appWith({ TARGET_PINGS_PER_MINUTE: '2' });
    const nu = await receiver({ kind: 'nuvotifier' });
    try {
      const codes = [];
      for (const client of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) {
        codes.push((await vote({ host: '127.0.0.1', port: nu.port, username: 'Steve', token: nu.token }, budget, client)).statusCode);
      }
      expect(codes).toEqual([200, 200, 429]);
      expect(nu.connections()).toBe(2);
    } finally {
      await budget.close();
    }
  });

  it('VOTES_ENABLED=false: 404, and the document has no /vote', async () => {
    const off = await appWith({ VOTES_ENABLED: 'false' });
    try {
      const res = await vote({ host: '127.0.0.1', username: 'Steve', token: 't' }, off);
      expect([res.statusCode, res.json().error]).toEqual([404, 'not_found']);
      expect(Object.keys((await off.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json().paths)).not.toContain('/vote');
    } finally {
      await off.close();
    }
  });
});

it('no token, key or username reaches the log, whatever the answer', async () => {
  const capture = logCapture();
  const logged = await appWith({ LOG_REQUESTS: 'true', LOG_LEVEL: 'debug' }, capture);
  const nu = await receiver({ kind: 'nuvotifier' });
  const secretName = 'Zq9SecretName';
  try {
    await vote({ host: '127.0.0.1', port: nu.port, username: secretName, token: nu.token }, logged);
    await vote({ host: '127.0.0.1', port: nu.port, username: secretName, token: 'tok-wrong-0xabc' }, logged);
    await vote({ host: '127.0.0.1', port: nu.port, username: secretName, public_key: nu.publicKey }, logged);
    await vote({ host: '127.0.0.1', port: nu.port, username: `${secretName}!`, token: 'tok-wrong-0xabc' }, logged);
    expect(capture.lines.length).toBeGreaterThan(0);
    const all = capture.lines.join('\n');
    for (const secret of [nu.token, 'tok-wrong-0xabc', nu.publicKey.slice(40, 80), secretName]) expect(all).not.toContain(secret);
  } finally {
    await logged.close();
  }
});
