/**
 * What the fuzz (fuzz.ts) knows of Observer beyond the document's schemas: the names it looks
 * up and what each is to a look-up in each mode, valid values for parameters and bodies (from
 * the schemas, with the few meanings a schema cannot say: an address, a webhook URL, a colour),
 * and the outcome of a valid request of each operation, read from its values: a 2xx, or the
 * documented 4xx they imply (an address without DNS records, a refused target, flags that
 * contradict each other, a watch's token). An operation the model does not know (one added
 * since) gets schema-valid requests and any documented 2xx or 4xx.
 */
import type { OpenApiDocument } from './document-check.js';

export type Rng = () => number;
export const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;
export const chance = (rng: Rng, p: number) => rng() < p;

/** How a server is asked: an edition's ping (`legacy`: the pre-1.7 Java one), or both editions. */
export type Mode = 'java' | 'legacy' | 'bedrock' | 'auto';
/** What a look-up of a name gives: a status (a 200, online or not), or the code of its refusal. */
export type LookupResult = 'status' | 'host_not_found' | 'target_refused' | 'invalid_address';

export interface Target {
  text: string;
  result: (mode: Mode) => LookupResult;
}

export interface Outcome {
  status: number;
  error?: string;
}

export interface Expectation {
  /** The answers the request may get; `documented`: any 2xx or 4xx its operation lists. */
  outcomes: Outcome[] | 'documented';
  /** The `Allow` a 405 carries. */
  allow?: string;
  /** A bulk look-up: what each entry of `results` may be (a status, or an error code). */
  entries?: string[][];
}

export interface FuzzContext {
  doc: OpenApiDocument;
  /** Names and addresses to look up, each with what it gives. */
  targets: Target[];
  /** The (target, mode) pairs whose history the setup recorded: `${text}|${mode}`. */
  recorded: Set<string>;
  /** A watch that stays, and watches a DELETE with their token may end, one each (`disposed`: how many are handed out). */
  watch: { id: string; token: string };
  disposable: Array<{ id: string; token: string }>;
  disposed: number;
  /** Webhook URLs, each with the refusal its watch creation meets (none: created). */
  webhooks: Array<{ url: string; refusal?: string }>;
  /** HTTP_BODY_LIMIT_BYTES of the instance. */
  bodyLimit: number;
}

/** The names every run looks up, given the live Java server's port (Bedrock on the same port) and a port nothing listens on. */
export function fuzzTargets(javaPort: number, closedPort: number): Target[] {
  const always = (result: LookupResult) => () => result;
  return [
    { text: `127.0.0.1:${javaPort}`, result: always('status') },
    { text: `127.0.0.1:${closedPort}`, result: always('status') },
    { text: '[::1]:1', result: always('status') },
    // Loopback without asking DNS (RFC 6761), which TARGET_ALLOWLIST admits: nothing listens on the default ports.
    { text: 'localhost', result: always('status') },
    // The test DNS server refuses names outside its zone: a DNS failure is an offline status.
    { text: 'Example.COM.', result: always('status') },
    // An SRV record only: Java follows it (to a port nothing listens on), Bedrock finds no address.
    { text: 'srv.observer.test', result: (mode) => (mode === 'bedrock' ? 'host_not_found' : 'status') },
    { text: 'missing.observer.test', result: always('host_not_found') },
    { text: 'server.invalid', result: always('host_not_found') },
    { text: '10.0.0.1', result: always('target_refused') },
    { text: 'a..b', result: always('invalid_address') },
  ];
}

/** The `error` of a look-up result as a single request answers it, and its status. */
function lookupOutcome(result: LookupResult): Outcome {
  if (result === 'status') return { status: 200 };
  return { status: result === 'host_not_found' ? 404 : 400, error: result };
}

/** A flag's value as sent (`?x`, `?x=`, `true`, `1` are true); undefined when not sent. */
function flag(values: Map<string, string | null>, name: string): boolean | undefined {
  if (!values.has(name)) return undefined;
  const value = values.get(name);
  return value === null || value === '' || value === 'true' || value === '1';
}

/** The mode flags ask for, or null when they contradict each other (400 `invalid_query`). */
export function modeOf(legacy = false, bedrock = false, edition?: string): Mode | null {
  if (edition === undefined) return legacy && bedrock ? null : bedrock ? 'bedrock' : legacy ? 'legacy' : 'java';
  if (edition === 'auto') return legacy || bedrock ? null : 'auto';
  if (edition === 'java') return bedrock ? null : legacy ? 'legacy' : 'java';
  return legacy ? null : 'bedrock';
}

const INVALID_QUERY: Outcome = { status: 400, error: 'invalid_query' };
const INVALID_PARAMETER: Outcome = { status: 400, error: 'invalid_parameter' };

/** What a valid request of one operation gets, from its values (decoded). */
export interface RequestValues {
  path: Record<string, string>;
  query: Map<string, string | null>;
  headers: Record<string, string>;
  body: unknown;
}

type Model = (values: RequestValues, context: FuzzContext) => Outcome[] | 'documented';

/** The target named `text`; undefined for a text the run does not know (a shrunk one). */
function targetOf(context: FuzzContext, text: string | null | undefined): Target | undefined {
  return context.targets.find((target) => target.text === text);
}

/** An address looked up in `mode` as a single status request answers it. */
function lookedUp(context: FuzzContext, text: string | null | undefined, mode: Mode | null): Outcome[] | 'documented' {
  if (mode === null) return [INVALID_QUERY];
  const target = targetOf(context, text);
  return target ? [lookupOutcome(target.result(mode))] : 'documented';
}

/** An image of a server: a name without records is drawn offline; `If-None-Match: *` is a 304. */
function drawn(values: RequestValues, outcomes: Outcome[] | 'documented'): Outcome[] | 'documented' {
  if (outcomes === 'documented') return outcomes;
  const asImage = outcomes.map((o) => (o.error === 'host_not_found' ? { status: 200 } : o));
  return asImage.map((o) => (o.status === 200 && values.headers['if-none-match'] === '*' ? { status: 304 } : o));
}

const modeFromFlags = (values: RequestValues) => modeOf(flag(values.query, 'legacy'), flag(values.query, 'bedrock'), values.query.get('edition') ?? undefined);

const HEX_COLOR = /^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
const WIDGET_FONTS = ['inter', 'roboto', 'poppins', 'montserrat', 'outfit'];
const WIDGET_COLORS = ['bgColor', 'textColor', 'onlineColor', 'offlineColor', 'gradientFrom', 'gradientTo'];

/** Whether the widget's string options are ones it draws with (what its schema cannot say). */
function widgetOptionsValid(query: Map<string, string | null>): boolean {
  for (const name of WIDGET_COLORS) if (query.has(name) && !HEX_COLOR.test(query.get(name) ?? '')) return false;
  const font = query.get('font');
  if (query.has('font') && !WIDGET_FONTS.includes((font ?? '').toLowerCase())) return false;
  if (query.has('customHeight')) {
    const pixels = /^(\d+)(px)?$/.exec(query.get('customHeight') ?? '');
    if (!pixels || Number(pixels[1]) < 50 || Number(pixels[1]) > 600) return false;
  }
  return true;
}

/** A watch operation: 404 for an id no watch has, 401 without its token, else `ok`. */
function managed(ok: Outcome[], byDisposable?: Outcome[]): Model {
  return (values, context) => {
    const bearer = /^Bearer (.*)$/.exec(values.headers.authorization ?? '')?.[1];
    const id = values.path.id;
    const disposable = context.disposable.find((watch) => watch.id === id);
    const watch = id === context.watch.id ? context.watch : disposable;
    if (!watch) return [{ status: 404, error: 'watch_not_found' }];
    if (bearer !== watch.token) return [{ status: 401, error: 'unauthorized' }];
    return disposable && byDisposable ? byDisposable : ok;
  };
}

/** What POST /watches answers a body: its address and webhook's refusals, else created within the caps. */
function createdWatch(values: RequestValues, context: FuzzContext): Outcome[] | 'documented' {
  const body = (values.body ?? {}) as { address?: string; webhook?: { url?: string } };
  const target = targetOf(context, body.address);
  const webhook = context.webhooks.find((w) => w.url === body.webhook?.url);
  if (!target || !webhook) return 'documented';
  if (target.result('java') === 'invalid_address') return [{ status: 400, error: 'invalid_address' }];
  if (webhook.refusal) return [{ status: 400, error: webhook.refusal }];
  // A client's caps depend on what it created before: the greedy client meets them.
  return [{ status: 201 }, { status: 409, error: 'too_many_unverified' }, { status: 409, error: 'too_many_watches' }, { status: 429, error: 'watch_capacity' }];
}

/**
 * What POST /vote answers a body, in the order the route checks it: its host (a port in it is
 * refused too), one secret exactly, a public key (any the fuzz makes is no key: a 200 with
 * `bad_key`, nothing resolved), then the host as a Bedrock look-up resolves it (no SRV). A vote
 * that is sent is a 200 whatever it meets.
 */
function voted(values: RequestValues, context: FuzzContext): Outcome[] | 'documented' {
  const body = (values.body ?? {}) as { host?: string; token?: string; public_key?: string };
  const target = targetOf(context, body.host);
  if (!target) return 'documented';
  const result = target.result('bedrock');
  if (result === 'invalid_address' || /:\d+$/.test(target.text)) return [{ status: 400, error: 'invalid_address' }];
  if ((body.token === undefined) === (body.public_key === undefined)) return [INVALID_PARAMETER];
  return body.public_key !== undefined ? [{ status: 200 }] : [lookupOutcome(result)];
}

/** Each entry of a bulk look-up: what the single endpoint would answer it. */
export function bulkEntries(body: unknown, context: FuzzContext): string[][] | null {
  const servers = (body as { servers?: Array<{ address: string; legacy?: boolean; bedrock?: boolean; edition?: string }> } | undefined)?.servers;
  if (!Array.isArray(servers)) return null;
  const entries: string[][] = [];
  for (const entry of servers) {
    const mode = modeOf(entry.legacy, entry.bedrock, entry.edition);
    const target = targetOf(context, entry.address);
    if (!target) return null;
    entries.push([mode === null ? 'invalid_query' : target.result(mode)]);
  }
  return entries;
}

/** The operations the model knows, by the GET's (or the POST's) operationId. */
const MODELS: Record<string, Model> = {
  getHealth: () => [{ status: 200 }],
  getServerStatus: (v, c) => lookedUp(c, v.path.address, modeFromFlags(v)),
  getServerStatuses: () => [{ status: 200 }],
  getServerIcon: (v, c) => {
    const address = v.query.get('address') ?? v.query.get('server');
    if (address === undefined) return [INVALID_PARAMETER];
    return drawn(v, lookedUp(c, address, modeFromFlags(v)));
  },
  getRoundedServerIcon: (v, c) => drawn(v, lookedUp(c, v.query.get('address'), modeFromFlags(v))),
  getMotdBanner: (v) => drawn(v, [{ status: 200 }]),
  getServerBanner: (v, c) => drawn(v, lookedUp(c, v.path.address, modeFromFlags(v))),
  getServerBadge: (v, c) => drawn(v, lookedUp(c, v.path.address, modeFromFlags(v))),
  getServerShieldsBadge: (v, c) => drawn(v, lookedUp(c, v.path.address, modeFromFlags(v))),
  getServerWidget: (v, c) => {
    if (!widgetOptionsValid(v.query)) return [INVALID_PARAMETER];
    const mode = modeFromFlags(v);
    if (mode !== null && v.path.address?.toLowerCase() === 'demo') return [{ status: 200 }];
    const outcomes = lookedUp(c, v.path.address, mode);
    return outcomes === 'documented' ? outcomes : outcomes.map((o) => (o.error === 'host_not_found' ? { status: 200 } : o));
  },
  getWidgetFont: (v) => (v.path.file === 'inter-latin-400-normal.woff2' ? [{ status: 200 }] : [{ status: 404, error: 'not_found' }]),
  getTrends: (v) => (v.query.has('cursor') ? [{ status: 400, error: 'invalid_cursor' }] : [{ status: 200 }]),
  getStatistics: () => [{ status: 200 }],
  getServerHistory: (v, c) => {
    const mode = modeFromFlags(v);
    if (mode === null) return [INVALID_QUERY];
    const target = targetOf(c, v.path.address);
    if (!target) return 'documented';
    if (target.result(mode) === 'invalid_address') return [{ status: 400, error: 'invalid_address' }];
    return c.recorded.has(`${target.text}|${mode}`) ? [{ status: 200 }] : [{ status: 404, error: 'not_found' }];
  },
  createWatch: createdWatch,
  getWatch: managed([{ status: 200 }]),
  deleteWatch: managed([{ status: 204 }]),
  verifyWatch: managed([{ status: 200 }]),
  testWatch: managed([{ status: 409, error: 'not_verified' }]),
  sendTestVote: voted,
  probeServer: (v, c) => {
    const outcomes = lookedUp(c, v.query.get('target'), modeOf(false, false, v.query.get('edition') ?? 'java'));
    return outcomes === 'documented' ? outcomes : outcomes.map((o) => (o.error === 'host_not_found' ? { status: 200 } : o));
  },
};

/**
 * What a route that takes a JSON body answers before its values matter: 415 for a body in
 * another media type or none, 400 `invalid_body` for an empty or missing one, or one that is
 * not JSON; null when the body is JSON to judge.
 */
export function bodyRefusal(contentType: string | undefined, body: string | undefined): Outcome | null {
  const json = contentType !== undefined && contentType.split(';', 1)[0]!.trim().toLowerCase() === 'application/json';
  if (body === undefined || body === '') return contentType === undefined || json ? { status: 400, error: 'invalid_body' } : { status: 415, error: 'unsupported_media_type' };
  if (!json) return { status: 415, error: 'unsupported_media_type' };
  try {
    JSON.parse(body);
    return null;
  } catch {
    return { status: 400, error: 'invalid_body' };
  }
}

/** The GET's operationId of a HEAD operation (src/http/contract.ts names them `head…`). */
export function modelName(operationId: string): string {
  return operationId.startsWith('head') ? `get${operationId.slice(4)}` : operationId.replace(/Head$/, '');
}

/** What a valid request of `operationId` gets; `documented` for an operation the model does not know. */
export function validOutcomes(operationId: string, values: RequestValues, context: FuzzContext): Outcome[] | 'documented' {
  const model = MODELS[modelName(operationId)];
  return model ? model(values, context) : 'documented';
}
