/**
 * A program written against the client @hey-api/openapi-ts generates from the served document
 * (into ./generated/hey-api): compiled under --strict by the contract test, then run against a
 * live instance. It narrows answers the way docs/clients.md says and reads errors as typed bodies.
 */
import { createClient } from './generated/hey-api/client';
import { getServerIcon, getServerStatus, getServerStatuses } from './generated/hey-api/sdk.gen';
import type { BulkError, EditionsStatus, ErrorResponse, ServerStatus } from './generated/hey-api/types.gen';
import type { ClientReport, ClientTarget, IsAny } from './report';

/** An error body written as JSON reads it: the codes are string literals, not a TypeScript enum. */
export const sample: ErrorResponse = { status: 'error', error: 'rate_limited', message: 'Rate limit exceeded.' };

export async function run(target: ClientTarget): Promise<ClientReport> {
  const client = createClient({ baseUrl: target.base, headers: target.client });

  const auto = await getServerStatus({ client, path: { address: target.server }, query: { edition: 'auto' } });
  if (auto.data === undefined) throw new Error(`edition=auto: ${auto.response?.status}`);
  const notAny: IsAny<typeof auto.data> = false;
  if (!('editions' in auto.data)) throw new Error('edition=auto answered a ServerStatus');
  const both: EditionsStatus = auto.data;

  const plain = await getServerStatus({ client, path: { address: target.server } });
  if (plain.data === undefined || 'editions' in plain.data) throw new Error('the plain request did not answer a ServerStatus');
  const status: ServerStatus = plain.data;

  const bulk = await getServerStatuses({ client, body: { servers: [{ address: target.server }, { address: target.server, edition: 'auto' }, { address: 'not an address' }] } });
  const bulkKinds = (bulk.data?.results ?? []).map((entry) => {
    if ('message' in entry) return `error:${(entry satisfies BulkError).error}`;
    if ('editions' in entry) return `editions:${entry.editions.join('+')}`;
    return `status:${(entry satisfies ServerStatus).online}`;
  });

  let imageError: ClientReport['imageError'] | null = null;
  for (let i = 0; i <= target.mediaLimit && imageError === null; i++) {
    const icon = await getServerIcon({ client, query: { address: target.server } });
    if (icon.error !== undefined) {
      const error: ErrorResponse = icon.error;
      const errorNotAny: IsAny<typeof icon.error> = false;
      void errorNotAny;
      imageError = { status: icon.response?.status ?? 0, error: error.error, message: error.message, retryAfter: icon.response?.headers.get('Retry-After') ?? null };
    } else if (!(icon.data instanceof Blob)) {
      throw new Error('the icon is not a Blob');
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
