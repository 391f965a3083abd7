/** A watch made through the API with a JSON webhook, and its view read back with its token. */
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';

export interface CreatedWatch {
  id: string;
  /** The watch's `whsec_` signing secret. */
  secret: string;
  /** GET /watches/{id} through `app` (the creating one by default), as JSON. */
  view: (app?: FastifyInstance) => Promise<{ state: string; deliveries: unknown[] } & Record<string, unknown>>;
}

export async function createJsonWatch(app: FastifyInstance, address: string, webhookUrl: string): Promise<CreatedWatch> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/watches',
    payload: { address, edition: 'java', webhook: { kind: 'json', url: webhookUrl } },
  });
  expect(res.statusCode).toBe(201);
  const { id, management_token: token, signing_secret: secret } = res.json() as { id: string; management_token: string; signing_secret: string };
  const view = async (through: FastifyInstance = app) =>
    (await through.inject({ method: 'GET', url: `/api/v1/watches/${id}`, headers: { authorization: `Bearer ${token}` } })).json();
  return { id, secret, view };
}
