/// <reference lib="dom" />
/**
 * "Send a test vote" in real Chromium against the whole service, a real Minecraft server (the
 * page it sits on) and Votifier and NuVotifier receivers on loopback: a vote to each arrives and
 * the page shows what the server answered, a wrong token shows the server's own cause; the
 * secret is never in the URL, storage or a cookie; axe-core finds no serious violation.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';
import { startVotifierReceiver, type VotifierReceiver } from '../support/votifier.js';
import { launchBrowser, open, seriousViolations, startFront, tearDown, type Front } from './harness.js';

let browser: Browser;
let front: Front;
let server: RunningJavaServer;
let nu: VotifierReceiver;
let v1: VotifierReceiver;

beforeAll(async () => {
  server = await startJavaServer({ motd: 'Vote for me' });
  nu = await startVotifierReceiver({ kind: 'nuvotifier' });
  v1 = await startVotifierReceiver({ kind: 'votifier' });
  front = await startFront({ RATE_LIMIT_VOTE: '100' });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await tearDown([
    ['browser', browser ? () => browser.close() : undefined],
    ['front', front ? () => front.close() : undefined],
    ['server', server ? () => server.close() : undefined],
    ['NuVotifier', nu ? () => nu.close() : undefined],
    ['Votifier', v1 ? () => v1.close() : undefined],
  ]);
});

it('sends a test vote to NuVotifier and to Votifier from the form, and shows what each server answered', async () => {
  const o = await open(browser, front, `/server/${encodeURIComponent(`127.0.0.1:${server.port}`)}`, { bypassCSP: true });
  const { page } = o;
  // The form shows once the page has the server's status: if it never does, say what the page's API calls got.
  await page.waitForSelector('#vote-title').catch((error: unknown) => {
    throw new Error(`the vote form did not show; the page's API calls: ${o.api.join(', ') || 'none'}`, { cause: error });
  });
  expect(await page.inputValue('#vote-host')).toBe('127.0.0.1');
  expect(await page.inputValue('#vote-port')).toBe('8192');
  expect(await seriousViolations(o)).toEqual([]);

  const sendVote = async (port: number, username: string, kind: 'token' | 'public_key', secret: string) => {
    await page.fill('#vote-port', String(port));
    await page.fill('#vote-username', username);
    await page.selectOption('#vote-kind', kind);
    await page.fill('#vote-secret', secret);
    await page.click('.vote-form button[type=submit]');
    await page.waitForSelector('.vote-result[data-sent]');
    return { sent: await page.getAttribute('.vote-result', 'data-sent'), text: (await page.textContent('.vote-result')) ?? '' };
  };

  expect(await sendVote(nu.port, 'Steve', 'token', nu.token)).toEqual({ sent: 'true', text: expect.stringMatching(/^Vote sent: the server answered ok/) });
  expect(nu.votes).toEqual([expect.objectContaining({ version: 2, service: 'Observer', username: 'Steve' })]);

  expect(await page.textContent('label[for="vote-secret"]')).toBe('NuVotifier token');
  await page.selectOption('#vote-kind', 'public_key');
  expect(await page.textContent('label[for="vote-secret"]')).toBe('Votifier public key');
  expect(await sendVote(v1.port, 'Alex', 'public_key', v1.publicKey)).toEqual({ sent: 'true', text: expect.stringMatching(/^Vote sent: the server read it and closed the connection/) });
  expect(v1.votes).toEqual([expect.objectContaining({ version: 1, username: 'Alex' })]);

  const refused = await sendVote(nu.port, 'Steve', 'token', 'wrong-secret-token');
  expect(refused.sent).toBe('false');
  expect(refused.text).toContain('Not sent (bad_token)');
  expect(refused.text).toContain('The server said: CorruptedFrameException: Signature is not valid (invalid token?)');
  expect(await seriousViolations(o)).toEqual([]);

  // The secrets went out in request bodies only.
  const kept = await page.evaluate(() => JSON.stringify({ url: location.href, local: { ...localStorage }, session: { ...sessionStorage }, cookie: document.cookie }));
  for (const secret of [nu.token, 'wrong-secret-token', v1.publicKey.slice(40, 80)]) {
    expect(kept).not.toContain(secret);
    expect(o.api.join('\n')).not.toContain(encodeURIComponent(secret));
  }
  expect(o.api.filter((line) => line.includes('/vote'))).toEqual(Array.from({ length: 3 }, () => ['request /api/v1/vote', 'response 200 /api/v1/vote']).flat());
  expect(o.errors).toEqual([]);
  expect(o.foreign).toEqual([]);

  await page.emulateMedia({ colorScheme: 'dark' });
  expect(await seriousViolations(o)).toEqual([]);
  await o.close();
}, 60_000);

it('says why a vote cannot be sent: a malformed host before any request, a name without records from the API', async () => {
  const o = await open(browser, front, `/server/${encodeURIComponent(`127.0.0.1:${server.port}`)}`);
  const { page } = o;
  await page.waitForSelector('#vote-title');
  await page.fill('#vote-host', 'a..b');
  await page.fill('#vote-username', 'Steve');
  await page.fill('#vote-secret', 'x');
  await page.click('.vote-form button[type=submit]');
  await page.waitForSelector('#vote-host[aria-invalid="true"]');
  expect(await page.textContent('.vote-result')).toBe('The host name has an empty label (two dots in a row).');
  expect(o.api.filter((line) => line.includes('/vote'))).toEqual([]);

  await page.fill('#vote-host', 'missing.observer.test');
  await page.click('.vote-form button[type=submit]');
  await page.waitForFunction(() => document.querySelector('.vote-result')?.textContent?.includes('no DNS records'));
  expect(await page.getAttribute('.vote-result', 'data-sent')).toBeNull();
  expect(o.api.filter((line) => line.includes('/vote'))).toEqual(['request /api/v1/vote', 'response 404 /api/v1/vote']);
  await o.close();
}, 60_000);
