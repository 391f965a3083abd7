/**
 * A program written against the fetch client orval generates from the served document (into
 * ./generated/orval, with `override.fetch.forceSuccessResponse`: an error answer is thrown with
 * its JSON body as `info`, also on the image routes whose successes are Blobs). Compiled under
 * --strict by the contract test, then run against a live instance.
 */
import {
  getServerIcon,
  getServerStatus,
  getServerStatuses,
  type getServerIconResponseError,
} from './generated/orval/api';
import type { BulkError, EditionsStatus, ErrorResponse, ServerStatus } from './generated/orval/api';
import type { ClientReport, ClientTarget, IsAny } from './report';

/** What orval throws for an error answer: its status and its body, typed by the operation's errors. */
type ThrownAnswer<Data> = Error & { info?: Data; status?: number };

/** An error body written as JSON reads it: the codes are string literals, not a TypeScript enum. */
export const sample: ErrorResponse = { status: 'error', error: 'rate_limited', message: 'Rate limit exceeded.' };

export async function run(target: ClientTarget): Promise<ClientReport> {
  const options: RequestInit = { headers: target.client };

  const auto = await getServerStatus(target.server, { edition: 'auto' }, options);
  const notAny: IsAny<typeof auto.data> = false;
  if (!('editions' in auto.data)) throw new Error('edition=auto answered a ServerStatus');
  const both: EditionsStatus = auto.data;

  const plain = await getServerStatus(target.server, undefined, options);
  if ('editions' in plain.data) throw new Error('the plain request answered an EditionsStatus');
  const status: ServerStatus = plain.data;

  const bulk = await getServerStatuses(
    { servers: [{ address: target.server }, { address: target.server, edition: 'auto' }, { address: 'not an address' }] },
    options,
  );
  const bulkKinds = bulk.data.results.map((entry) => {
    if ('message' in entry) return `error:${(entry satisfies BulkError).error}`;
    if ('editions' in entry) return `editions:${entry.editions.join('+')}`;
    return `status:${(entry satisfies ServerStatus).online}`;
  });

  let imageError: ClientReport['imageError'] | null = null;
  for (let i = 0; i <= target.mediaLimit && imageError === null; i++) {
    try {
      const icon = await getServerIcon({ address: target.server }, options);
      if (!(icon.data instanceof Blob)) throw new Error('the icon is not a Blob');
    } catch (thrown) {
      const answer = thrown as ThrownAnswer<getServerIconResponseError['data']>;
      const body = answer.info;
      if (answer.status === undefined || body === undefined || body === null || typeof body !== 'object') throw thrown;
      imageError = { status: answer.status, error: body.error, message: body.message, retryAfter: null };
    }
  }
  if (imageError === null) throw new Error('no 429 from the icon route');
  void notAny;
  return {
    autoEditions: both.editions,
    autoJavaOnline: both.java.online,
    plainOnline: status.online,
    plainPort: status.query.port,
    imageError,
    bulkKinds,
  };
}
