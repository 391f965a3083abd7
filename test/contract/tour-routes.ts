/**
 * The tour itself (tour.ts): route by route, the successes and the errors the document lists,
 * on three instances: `main` with small rate limits, `busy` with one ping at a time and one
 * ping per target IP a minute, and `maintenance`.
 */
import { startSilentServer } from '../support/hostile.js';
import { freePort } from '../../scripts/ports.mjs';
import type { RunningJavaServer } from '../support/minecraft.js';
import { startJavaServer } from '../support/minecraft.js';
import { startVotifierReceiver } from '../support/votifier.js';
import type { WebhookReceiver } from '../support/webhook-receiver.js';
import { newClient, send, type Instance, type TourLog } from './tour.js';

export interface TourServers {
  /** A Java server with a Bedrock server on the same port number (UDP). */
  java: RunningJavaServer;
  receiver: WebhookReceiver;
}

export interface TourInstances {
  main: Instance;
  busy: Instance;
  maintenance: Instance;
  /** Small watch caps: WATCHES_PER_CLIENT 2, WATCHES_PER_SERVER 1, WATCHES_MAX 2, one delivery per webhook host a minute. */
  caps: Instance;
}

/** Documented answers no request can bring about on purpose on loopback, each with why. */
export const NOT_BROUGHT_ABOUT: RegExp[] = [
  // 500 internal_error: an unexpected error in Observer; the error handler's own tests cover its shape.
  / 500$/,
  // 408 request_timeout: a client stalling past HTTP_HEADERS_TIMEOUT_MS, at least a second each (test/http/wire-errors.test.ts).
  / 408$/,
  // HEAD: a GET's answer without its body; test/contract/fuzz.test.ts asks every HEAD operation.
  /^HEAD /,
];

/** Error codes the tour does not bring about, each with why (every other one it must). */
export const CODES_NOT_BROUGHT_ABOUT: Record<string, string> = {
  internal_error: 'an unexpected error in Observer',
  overloaded: 'sheds work by event-loop lag or renders in flight at one instant (test/http/admission.test.ts)',
  store_unavailable: 'needs the history database down with no earlier answer (test/store, test/http/history.test.ts)',
  migrating: 'needs a schema migration running (test/store/migration-crash.test.ts)',
  webhook_dns_failure: "needs the DNS server failing for the webhook's name (test/watch)",
  shutting_down: 'needs a test delivery asked for while the instance stops (test/watch/shutdown.test.ts)',
  request_timeout: 'needs a client stalling past HTTP_HEADERS_TIMEOUT_MS (test/http/wire-errors.test.ts)',
  method_not_allowed: 'answers a method the document has no operation for (test/http/wire-errors.test.ts, test/contract/fuzz.test.ts)',
};

const JSON_TYPE = { 'content-type': 'application/json' };

export async function tourEverything(log: TourLog, instances: TourInstances, servers: TourServers, limit: number): Promise<void> {
  const { main } = instances;
  const server = `127.0.0.1:${servers.java.port}`;
  await log.run(main, { path: '/status', url: '/status', status: 200 });
  await tourStatus(log, main, server, limit);
  await tourBulk(log, main, server, limit);
  await tourProbe(log, main, server, limit);
  await tourImages(log, main, server, limit);
  await tourWidget(log, main, server, limit);
  await tourReads(log, main, server, limit);
  await tourWatches(log, main, servers.receiver, limit);
  await tourWatchCaps(log, instances.caps, servers.receiver);
  await tourVotes(log, instances, limit);
  await tourBusy(log, instances.busy, server);
  await tourEveryOperation(log, instances);
}

async function tourStatus(log: TourLog, main: Instance, server: string, limit: number): Promise<void> {
  const path = '/status/{address}';
  for (const query of ['', '', '?bedrock=true', '?edition=auto', '?legacy=true', '?query=true', '?edition=bedrock&query=true']) {
    await log.run(main, { path, url: `/status/${server}${query}`, status: 200 });
  }
  await log.run(main, { path, url: `/status/127.0.0.1:${await freePort()}`, status: 200 });
  // An SRV record to a port nothing listens on: offline, with `srvRecord`.
  await log.run(main, { path, url: '/status/srv.observer.test', status: 200 });
  await log.run(main, { path, url: '/status/a..b', status: 400, error: 'invalid_address' });
  await log.run(main, { path, url: `/status/${server}?legacy=true&bedrock=true`, status: 400, error: 'invalid_query' });
  await log.run(main, { path, url: `/status/${server}?queryPort=0`, status: 400, error: 'invalid_parameter' });
  await log.run(main, { path, url: '/status/10.0.0.1', status: 400, error: 'target_refused' });
  await log.run(main, { path, url: '/status/missing.observer.test', status: 404, error: 'host_not_found' });
  await log.untilLimited(main, { path, url: `/status/${server}` }, limit);
}

async function tourProbe(log: TourLog, main: Instance, server: string, limit: number): Promise<void> {
  const path = '/probe';
  await log.run(main, { path, url: `/probe?target=${server}`, status: 200 });
  await log.run(main, { path, url: `/probe?target=${server}&edition=auto&query=true`, headers: { accept: 'application/openmetrics-text; version=1.0.0' }, status: 200 });
  await log.run(main, { path, url: '/probe?target=missing.observer.test', status: 200 });
  await log.run(main, { path, url: '/probe', status: 400, error: 'invalid_parameter' });
  await log.run(main, { path, url: '/probe?target=a..b', status: 400, error: 'invalid_address' });
  await log.run(main, { path, url: '/probe?target=10.0.0.1&edition=bedrock', status: 400, error: 'target_refused' });
  await log.untilLimited(main, { path, url: `/probe?target=${server}` }, limit);
}

async function tourBulk(log: TourLog, main: Instance, server: string, limit: number): Promise<void> {
  const path = '/status/bulk';
  const post = (body: string, headers: Record<string, string> = JSON_TYPE) => ({ method: 'POST' as const, path, url: path, headers, body });
  const entries = [{ address: server }, { address: server, edition: 'auto' }, { address: server, bedrock: true }, { address: 'missing.observer.test' }];
  await log.run(main, { ...post(JSON.stringify({ servers: entries })), status: 200 });
  await log.run(main, { ...post('{"servers":[]}'), status: 400, error: 'invalid_parameter' });
  await log.run(main, { ...post('{"servers":'), status: 400, error: 'invalid_body' });
  await log.run(main, { ...post(JSON.stringify({ servers: [{ address: server }] }), { 'content-type': 'text/plain' }), status: 415, error: 'unsupported_media_type' });
  await log.run(main, { ...post(JSON.stringify({ servers: [{ address: server }] }), {}), status: 415, error: 'unsupported_media_type' });
  const many = JSON.stringify({ servers: Array.from({ length: limit + 1 }, () => ({ address: server })) });
  await log.run(main, { ...post(many), status: 429, error: 'rate_limited' });
}

/** An image route's success, its 304 with the ETag it gave, a 400 and its 429. */
async function tourImage(log: TourLog, main: Instance, route: { path: string; url: string; bad: string }, limit: number): Promise<void> {
  const first = await log.run(main, { path: route.path, url: route.url, status: 200 });
  const etag = first.headers.get('etag') ?? '';
  await log.run(main, { path: route.path, url: route.url, headers: { 'if-none-match': etag }, status: 304 });
  await log.run(main, { path: route.path, url: route.bad, status: 400 });
  if (route.path !== '/banner/motd') await log.untilLimited(main, { path: route.path, url: route.url }, limit);
}

async function tourImages(log: TourLog, main: Instance, server: string, limit: number): Promise<void> {
  await tourImage(log, main, { path: '/icon/dynamic', url: `/icon/dynamic?address=${server}`, bad: '/icon/dynamic?size=80' }, limit);
  await log.run(main, { path: '/icon/dynamic', url: `/icon/dynamic?server=${server}&format=webp`, status: 200 });
  await tourImage(log, main, { path: '/icon/sharp', url: `/icon/sharp?address=${server}`, bad: `/icon/sharp?address=${server}&size=1` }, limit);
  await tourImage(log, main, { path: '/banner/motd', url: '/banner/motd?motd=%C2%A7aContract', bad: '/banner/motd?motd=x&textColor=zz' }, limit);
  await tourImage(log, main, { path: '/banner/{address}', url: `/banner/${server}`, bad: '/banner/a..b' }, limit);
  await tourImage(log, main, { path: '/badge/{address}', url: `/badge/${server}`, bad: `/badge/${server}?style=round` }, limit);
  await tourImage(log, main, { path: '/shields/{address}', url: `/shields/${server}`, bad: `/shields/${server}?style=round` }, limit);
  // A name with no DNS records is an offline image, not a 404.
  await log.run(main, { path: '/banner/{address}', url: '/banner/missing.observer.test', status: 200 });
}

async function tourWidget(log: TourLog, main: Instance, server: string, limit: number): Promise<void> {
  const page = '/widget/{size}/{address}';
  await log.run(main, { path: page, url: `/widget/normal/${server}`, status: 200 });
  await log.run(main, { path: page, url: '/widget/large/demo?theme=light', status: 200 });
  await log.run(main, { path: page, url: '/widget/normal/demo?bgColor=zz', status: 400, error: 'invalid_parameter' });
  await log.untilLimited(main, { path: page, url: '/widget/small/demo' }, limit);
  const font = '/widget/fonts/{file}';
  await log.run(main, { path: font, url: '/widget/fonts/inter-latin-400-normal.woff2', status: 200 });
  await log.run(main, { path: font, url: '/widget/fonts/none.woff2', status: 404, error: 'not_found' });
  await log.run(main, { path: font, url: `/widget/fonts/${'x'.repeat(65)}`, status: 400, error: 'invalid_parameter' });
  await log.untilLimited(main, { path: font, url: '/widget/fonts/inter-latin-400-normal.woff2' }, limit);
}

async function tourReads(log: TourLog, main: Instance, server: string, limit: number): Promise<void> {
  await log.run(main, { path: '/trends', url: '/trends', status: 200 });
  await log.run(main, { path: '/trends', url: '/trends?limit=0', status: 400, error: 'invalid_parameter' });
  await log.run(main, { path: '/trends', url: '/trends?cursor=7d444840-9dc0-11d1-b245-5ffdce74fad2', status: 400, error: 'invalid_cursor' });
  await log.untilLimited(main, { path: '/trends', url: '/trends' }, limit);
  await log.run(main, { path: '/stats', url: '/stats', status: 200 });
  await log.untilLimited(main, { path: '/stats', url: '/stats' }, limit);
  const history = '/history/{address}';
  // The checks of the tour's look-ups reach the history by group commit, a few milliseconds later.
  for (let i = 0; i < 50 && (await send(main, { path: history, url: `/history/${server}`, status: 0 })).status !== 200; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await log.run(main, { path: history, url: `/history/${server}?range=7d`, status: 200 });
  await log.run(main, { path: history, url: '/history/never.observer.test', status: 404, error: 'not_found' });
  await log.run(main, { path: history, url: '/history/a..b', status: 400, error: 'invalid_address' });
  await log.untilLimited(main, { path: history, url: `/history/${server}` }, limit);
}

/** A watch's life (create, refuse, read, verify, test, delete) and each refusal of its routes. */
async function tourWatches(log: TourLog, main: Instance, receiver: WebhookReceiver, limit: number): Promise<void> {
  // A server of its own, whose MOTD can show the verification token before its first look-up.
  const owned = await startJavaServer({ motd: 'owned' });
  try {
    const create = (webhook: unknown, client = newClient(), address = `127.0.0.1:${owned.port}`) => ({
      method: 'POST' as const,
      path: '/watches',
      url: '/watches',
      headers: JSON_TYPE,
      body: JSON.stringify({ address, webhook }),
      client,
    });
    const owner = newClient();
    const created = await log.run(main, { ...create({ kind: 'json', url: receiver.url() }, owner), status: 201 });
    const { id, management_token: token, watch } = JSON.parse(created.body.toString('utf8')) as {
      id: string;
      management_token: string;
      watch: { verification: { token: string } };
    };
    await log.run(main, { ...create({ kind: 'json', url: receiver.url() }, owner), status: 409, error: 'too_many_unverified' });
    await log.run(main, { ...create({ kind: 'json', url: 'ftp://hooks.observer.test/' }), status: 400, error: 'invalid_webhook' });
    await log.run(main, { ...create({ kind: 'discord', url: 'http://localhost/hook' }), status: 400, error: 'webhook_refused' });
    await log.run(main, { ...create({ kind: 'json', url: 'http://missing.observer.test/hook' }), status: 400, error: 'webhook_not_found' });
    await log.run(main, { ...create({ kind: 'json', url: receiver.url() }, newClient(), 'a..b'), status: 400, error: 'invalid_address' });
    await log.run(main, { ...create({ kind: 'sms' }), status: 400, error: 'invalid_parameter' });
    await log.run(main, { ...create({ kind: 'json', url: receiver.url() }), headers: { 'content-type': 'text/plain' }, status: 415, error: 'unsupported_media_type' });
    await log.untilLimited(main, { ...create({ kind: 'json', url: receiver.url() }), headers: JSON_TYPE }, limit);

    const bearer = { authorization: `Bearer ${token}` };
    const watchPath = '/watches/{id}';
    await log.run(main, { path: watchPath, url: `/watches/${id}`, headers: bearer, status: 200 });
    await log.run(main, { method: 'POST', path: '/watches/{id}/test', url: `/watches/${id}/test`, headers: bearer, status: 409, error: 'not_verified' });
    // The MOTD is read through the status cache: the server, first looked up now, shows the token.
    owned.setMotd(`owned ${watch.verification.token}`);
    await log.run(main, { method: 'POST', path: '/watches/{id}/verify', url: `/watches/${id}/verify`, headers: bearer, status: 200 });
    await log.run(main, { method: 'POST', path: '/watches/{id}/test', url: `/watches/${id}/test`, headers: bearer, status: 200 });
    for (const [method, path, suffix] of [['GET', watchPath, ''], ['POST', '/watches/{id}/verify', '/verify'], ['POST', '/watches/{id}/test', '/test'], ['DELETE', watchPath, '']] as const) {
      await log.run(main, { method, path, url: `/watches/${id}${suffix}`, status: 401, error: 'unauthorized' });
      await log.run(main, { method, path, url: `/watches/0b6f4c1e-5d2a-4e8b-9c3f-7a1d2e3f4a5b${suffix}`, headers: bearer, status: 404, error: 'watch_not_found' });
      await log.run(main, { method, path, url: `/watches/${'x'.repeat(65)}${suffix}`, headers: bearer, status: 400, error: 'invalid_parameter' });
      await log.untilLimited(main, { method, path, url: `/watches/${id}${suffix}`, headers: { authorization: 'Bearer wrong' } }, limit);
    }
    await log.run(main, { method: 'DELETE', path: watchPath, url: `/watches/${id}`, headers: bearer, status: 204 });
    await log.run(main, { path: watchPath, url: `/watches/${id}`, headers: bearer, status: 404, error: 'watch_not_found' });
  } finally {
    await owned.close();
  }
}

/** The caps on watches, and the limits of test deliveries. */
async function tourWatchCaps(log: TourLog, caps: Instance, receiver: WebhookReceiver): Promise<void> {
  const servers = await Promise.all([startJavaServer({ motd: 'first' }), startJavaServer({ motd: 'second' }), startJavaServer({ motd: 'third' })]);
  try {
    const create = async (client: string, server: RunningJavaServer, status = 201, error?: string) => {
      const body = JSON.stringify({ address: `127.0.0.1:${server.port}`, webhook: { kind: 'json', url: receiver.url() } });
      const answer = await log.run(caps, { method: 'POST', path: '/watches', url: '/watches', headers: JSON_TYPE, body, client, status, ...(error ? { error } : {}) });
      return status === 201 ? (JSON.parse(answer.body.toString('utf8')) as { id: string; management_token: string; watch: { verification: { token: string } } }) : null;
    };
    const [a, b, c] = [newClient(), newClient(), newClient()];
    const w1 = (await create(a, servers[0]!))!;
    const w2 = (await create(b, servers[0]!))!;
    const w3 = (await create(a, servers[1]!))!;
    const w4 = (await create(c, servers[2]!))!;
    await create(a, servers[2]!, 409, 'too_many_watches');
    servers[0]!.setMotd(`first ${w1.watch.verification.token} ${w2.watch.verification.token}`);
    servers[1]!.setMotd(`second ${w3.watch.verification.token}`);
    servers[2]!.setMotd(`third ${w4.watch.verification.token}`);
    const on = (watch: { id: string; management_token: string }, suffix: string, status: number, error?: string) =>
      log.run(caps, {
        method: 'POST',
        path: `/watches/{id}${suffix}`,
        url: `/watches/${watch.id}${suffix}`,
        headers: { authorization: `Bearer ${watch.management_token}` },
        status,
        ...(error ? { error } : {}),
      });
    await on(w1, '/verify', 200);
    await on(w2, '/verify', 409, 'too_many_server_watches');
    await on(w3, '/verify', 200);
    await on(w4, '/verify', 429, 'watch_capacity');
    await create(c, servers[2]!, 429, 'watch_capacity');
    await on(w1, '/test', 200);
    await on(w1, '/test', 429, 'test_rate_limited');
    await on(w3, '/test', 429, 'webhook_rate_limited');
  } finally {
    await Promise.all(servers.map((server) => server.close()));
  }
}

/** Test votes to a NuVotifier receiver: taken, refused by the server, and each refusal of the route. */
async function tourVotes(log: TourLog, instances: TourInstances, limit: number): Promise<void> {
  // On an address of its own: the busy instance's one ping a minute to 127.0.0.1 is spent by tourBusy.
  const nu = await startVotifierReceiver({ kind: 'nuvotifier', host: '127.0.0.4' });
  try {
    const path = '/vote';
    const post = (body: unknown, headers: Record<string, string> = JSON_TYPE) => ({ method: 'POST' as const, path, url: path, headers, body: JSON.stringify(body) });
    const vote = { host: '127.0.0.4', port: nu.port, username: 'Steve' };
    const { main, busy } = instances;
    await log.run(main, { ...post({ ...vote, token: nu.token }), status: 200 });
    await log.run(main, { ...post({ ...vote, token: 'wrong', service: 'Contract', address: '198.51.100.1', timestamp: 1 }), status: 200 });
    await log.run(main, { ...post({ ...vote, public_key: nu.publicKey }), status: 200 });
    await log.run(main, { ...post({ ...vote, public_key: 'not a key' }), status: 200 });
    await log.run(main, { ...post(vote), status: 400, error: 'invalid_parameter' });
    await log.run(main, { ...post({ ...vote, host: 'a..b', token: 't' }), status: 400, error: 'invalid_address' });
    await log.run(main, { ...post({ ...vote, host: '10.0.0.1', token: 't' }), status: 400, error: 'target_refused' });
    await log.run(main, { ...post({ ...vote, host: 'missing.observer.test', token: 't' }), status: 404, error: 'host_not_found' });
    await log.run(main, { method: 'POST', path, url: path, headers: JSON_TYPE, body: '{"host":', status: 400, error: 'invalid_body' });
    await log.run(main, { ...post({ ...vote, token: 't' }, { 'content-type': 'text/plain' }), status: 415, error: 'unsupported_media_type' });
    await log.untilLimited(main, post(vote), limit);
    await log.run(busy, { ...post({ ...vote, token: nu.token }), status: 200 });
    await log.run(busy, { ...post({ ...vote, token: nu.token }), status: 429, error: 'target_rate_limited' });
  } finally {
    await nu.close();
  }
}

/** One ping at a time and one ping per target IP a minute: 429 `target_rate_limited`, 503 `service_busy`. */
async function tourBusy(log: TourLog, busy: Instance, server: string): Promise<void> {
  const path = '/status/{address}';
  await log.run(busy, { path, url: `/status/${server}`, status: 200 });
  await log.run(busy, { path, url: `/status/127.0.0.1:${await freePort()}`, status: 429, error: 'target_rate_limited' });
  const silent = await startSilentServer('127.0.0.2');
  try {
    const held = send(busy, { path, url: `/status/127.0.0.2:${silent.port}`, status: 0 });
    for (let i = 0; i < 100 && silent.accepted() === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    await log.run(busy, { path, url: `/status/127.0.0.3:${await freePort('127.0.0.3')}`, status: 503, error: 'service_busy' });
    await held;
  } finally {
    await silent.close();
  }
}

/**
 * Every operation of the document, its path parameters filled with the document's examples:
 * with a path parameter of malformed percent-encoding (400 `bad_request`) or over the router's
 * 1,000 characters (400 `invalid_parameter`), without `Host` (400 `bad_request`), with a URL
 * over 16 KiB (431 `headers_too_large`), with a body where it takes none (413
 * `body_not_allowed`) or a body over the limit (413 `body_too_large`), and in maintenance (503
 * `maintenance`, health excepted).
 */
async function tourEveryOperation(log: TourLog, instances: TourInstances): Promise<void> {
  for (const { method, path, url, brokenUrl, takesBody } of log.operations('%E0%A4%A')) {
    if (method === 'HEAD') continue;
    await log.run(instances.main, { method, path, url, noHost: true, status: 400, error: 'bad_request' });
    await log.run(instances.main, { method, path, url: `${url}?pad=${'x'.repeat(20_000)}`, status: 431, error: 'headers_too_large' });
    if (brokenUrl !== null) {
      await log.run(instances.main, { method, path, url: brokenUrl, status: 400, error: 'bad_request' });
      const long = brokenUrl.replace('%E0%A4%A', 'x'.repeat(1001));
      await log.run(instances.main, { method, path, url: long, status: 400, error: 'invalid_parameter' });
    }
    const oversized = { headers: JSON_TYPE, body: JSON.stringify({ servers: [{ address: 'x'.repeat(20_000) }] }) };
    if (takesBody) await log.run(instances.main, { method, path, url, ...oversized, status: 413, error: 'body_too_large' });
    else await log.run(instances.main, { method, path, url, headers: { 'content-type': 'text/plain' }, body: 'x', status: 413, error: 'body_not_allowed' });
    if (path !== '/status') await log.run(instances.maintenance, { method, path, url, status: 503, error: 'maintenance' });
  }
}
