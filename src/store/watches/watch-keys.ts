/** Keys the watches share across instances (the signing key, the client salt), kept in `watch_keys`. */
import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';

/** The stored key called `name`, made by `create` and stored when there is none (the first instance's wins). */
export async function storedKey(db: Kysely<Database>, name: string, create: () => string): Promise<string> {
  const found = await db.selectFrom('watch_keys').select('value').where('name', '=', name).executeTakeFirst();
  if (found) return found.value;
  await db
    .insertInto('watch_keys')
    .values({ name, value: create() })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const stored = await db.selectFrom('watch_keys').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return stored.value;
}
