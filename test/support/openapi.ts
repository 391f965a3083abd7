import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/**
 * Validates response bodies against the schemas of the app's own OpenAPI document, so the
 * documentation and the behaviour cannot drift apart.
 */
export async function openApiValidator(app: { inject: (o: { method: 'GET'; url: string }) => Promise<{ json: () => unknown }> }) {
  const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json() as {
    components: { schemas: Record<string, unknown> };
  };
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  // The document's $refs point at '#/components/schemas/<Name>'.
  ajv.addSchema({ $id: 'doc', components: doc.components });
  return (schemaName: string, body: unknown): string[] => {
    const validate = ajv.getSchema(`doc#/components/schemas/${schemaName}`);
    if (!validate) throw new Error(`no schema ${schemaName} in the OpenAPI document`);
    return validate(body) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
  };
}
