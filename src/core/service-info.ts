import { readFileSync } from 'node:fs';

/** Service identity for the health endpoint; the version is package.json's. */
export const SERVICE_NAME = 'observer';
export const SERVICE_VERSION: string = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
