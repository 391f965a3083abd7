/**
 * A program written against the modular fetch client swagger-typescript-api generates from the
 * served document (into ./generated/swagger-typescript-api). Compiled under --strict by the
 * contract test, then run against a live instance.
 *
 * swagger-typescript-api reads every answer of an operation in the format of its success: on
 * an image route the thrown error's `error` field holds a Blob, whatever the document says. The
 * thrown value is the Response itself with its body unread, so the JSON error is read from it.
 */
import type { BulkError, EditionsStatus, ErrorResponse, ServerStatus } from './generated/swagger-typescript-api/data-contracts';
import type { HttpResponse } from './generated/swagger-typescript-api/http-client';
import { Icon } from './generated/swagger-typescript-api/Icon';
import { Status } from './generated/swagger-typescript-api/Status';
import type { ClientReport, ClientTarget, IsAny } from './report';

/** The error body of a thrown answer, as the operation's error type says. */
async function errorBody(answer: HttpResponse<unknown, ErrorResponse>): Promise<ErrorResponse> {
  const body: ErrorResponse = await answer.json();
  return body;
}

/** An error body written as JSON reads it: the codes are string literals, not a TypeScript enum. */
export const sample: ErrorResponse = { status: 'error', error: 'rate_limited', message: 'Rate limit exceeded.' };

export async function run(target: ClientTarget): Promise<ClientReport> {
  const config = { baseUrl: target.base, baseApiParams: { headers: target.client } };
  const statusApi = new Status(config);
  const iconApi = new Icon(config);

  const auto = await statusApi.getServerStatus(target.server, { edition: 'auto' });
  const notAny: IsAny<typeof auto.data> = false;
  if (!('editions' in auto.data)) throw new Error('edition=auto answered a ServerStatus');
  const both: EditionsStatus = auto.data;

  const plain = await statusApi.getServerStatus(target.server);
  if ('editions' in plain.data) throw new Error('the plain request answered an EditionsStatus');
  const status: ServerStatus = plain.data;

  const bulk = await statusApi.getServerStatuses({
    servers: [{ address: target.server }, { address: target.server, edition: 'auto' }, { address: 'not an address' }],
  });
  const bulkKinds = bulk.data.results.map((entry) => {
    if ('message' in entry) return `error:${(entry satisfies BulkError).error}`;
    if ('editions' in entry) return `editions:${entry.editions.join('+')}`;
    return `status:${(entry satisfies ServerStatus).online}`;
  });

  let imageError: ClientReport['imageError'] | null = null;
  for (let i = 0; i <= target.mediaLimit && imageError === null; i++) {
    try {
      const icon = await iconApi.getServerIcon({ address: target.server });
      if (!(icon.data instanceof Blob)) throw new Error('the icon is not a Blob');
    } catch (thrown) {
      if (!(thrown instanceof Response)) throw thrown;
      const answer = thrown as HttpResponse<unknown, ErrorResponse>;
      const body = await errorBody(answer);
      imageError = { status: answer.status, error: body.error, message: body.message, retryAfter: answer.headers.get('Retry-After') };
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
