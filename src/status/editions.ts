/**
 * `edition=auto` (docs/lookups.md, "Both editions in one look-up"): one request asks the modern
 * Java ping and the Bedrock ping at once, each within its own PING_TIMEOUT_MS started together,
 * through the same look-ups (cache entries, coalescing) as the plain Java and Bedrock requests.
 * An explicit port applies to both editions; without one, Java follows its SRV record or uses
 * 25565 and Bedrock uses 19132.
 */
import { BadRequestError, HostNotFoundError } from '../core/errors.js';
import { offlineStatus, type Edition, type QueryMode, type ServerStatus } from '../core/types.js';
import { defaultPort, parseAddress, parseQueryMode, queryEcho } from '../resolve/index.js';
import { statusBody } from './cache.js';
import { serverId } from './server-id.js';
import type { CacheState, LookupOptions, StatusAnswer, StatusLookup } from './types.js';

export type EditionChoice = Edition | 'auto';

/** The editions an auto look-up asks, in the order its body lists them. */
export const AUTO_EDITIONS: readonly Edition[] = ['java', 'bedrock'];

function contradiction(message: string): BadRequestError {
  return new BadRequestError('invalid_query', message);
}

/**
 * What a request asks for: one mode, or both editions. Without `edition` the flags decide as
 * they always did; `edition=java` is the Java ping (legacy with `legacy=true`), `edition=bedrock`
 * the Bedrock ping; a flag that contradicts `edition` is a 400.
 */
export function parseEditionChoice(edition: EditionChoice | undefined, legacy: boolean, bedrock: boolean): QueryMode | 'auto' {
  if (edition === undefined) return parseQueryMode(legacy, bedrock);
  if (edition === 'auto') {
    if (legacy || bedrock) {
      throw contradiction('edition=auto asks the Java and the Bedrock ping; it cannot be combined with legacy or bedrock.');
    }
    return 'auto';
  }
  if (edition === 'java') {
    if (bedrock) throw contradiction('edition=java cannot be combined with bedrock=true.');
    return legacy ? 'legacy' : 'java';
  }
  if (legacy) throw contradiction('edition=bedrock cannot be combined with legacy=true (a Java protocol).');
  return 'bedrock';
}

/** The answer of an auto look-up: its body (serialised once), `X-Cache` and `max-age`. */
export interface EditionsAnswer {
  body: string;
  cache: CacheState;
  maxAgeSeconds: number;
  /** Each edition's answer, in the order of AUTO_EDITIONS (a name without records: offline, `dns_not_found`). */
  answers: readonly StatusAnswer[];
}

type Outcome = { ok: true; answer: StatusAnswer } | { ok: false; error: unknown };

function settle(promise: Promise<StatusAnswer>): Promise<Outcome> {
  return promise.then(
    (answer) => ({ ok: true as const, answer }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

/**
 * Both editions at once. A 404 for one edition (a name with only an SRV record has no
 * address for Bedrock) is that edition offline with `dns_not_found`; a 404 for both is the
 * 404; any other error of either (400, 429, 503) is the answer.
 */
export async function lookupEditions(
  status: StatusLookup,
  address: string,
  options: LookupOptions,
): Promise<EditionsAnswer> {
  const parsed = parseAddress(address);
  const outcomes = await Promise.all(AUTO_EDITIONS.map((edition) => settle(status.lookup(address, edition, options))));
  const failed = outcomes.find((o): o is Extract<Outcome, { ok: false }> => !o.ok && !(o.error instanceof HostNotFoundError));
  if (failed) throw failed.error;
  if (outcomes.every((o) => !o.ok)) throw new HostNotFoundError(parsed.host);
  // The other edition's look-up ran at the same moment: its check time stands for both.
  const checkedAt = outcomes.find((o): o is Extract<Outcome, { ok: true }> => o.ok)?.answer.status.checked_at ?? '';
  const answers = outcomes.map((outcome, index) => {
    if (outcome.ok) return outcome.answer;
    const mode = AUTO_EDITIONS[index] as Edition;
    const notFound = offlineStatus(queryEcho(parsed, mode), {
      server_id: serverId(mode, parsed.host, parsed.port ?? defaultPort(mode)),
      error: 'unknown host',
      error_code: 'dns_not_found',
      checked_at: checkedAt,
    });
    return { status: notFound, cache: 'MISS', maxAgeSeconds: 0 } satisfies StatusAnswer;
  });
  const statuses = answers.map((a) => a.status);
  const speaks = AUTO_EDITIONS.filter((_, index) => statuses[index]?.online);
  const head = JSON.stringify({ query: { host: parsed.host, port: parsed.port, edition: 'auto' }, online: speaks.length > 0, editions: speaks });
  const parts = AUTO_EDITIONS.map((edition, index) => `"${edition}":${statusBody(statuses[index] as ServerStatus)}`);
  return {
    body: `${head.slice(0, -1)},${parts.join(',')}}`,
    cache: answers.some((a) => a.cache === 'MISS') ? 'MISS' : answers.some((a) => a.cache === 'STALE') ? 'STALE' : 'HIT',
    maxAgeSeconds: Math.min(...answers.map((a) => a.maxAgeSeconds)),
    answers,
  };
}
