import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Bytes of a hex fixture in test/fixtures/protocol (whitespace ignored). */
export function fixture(name: string): Buffer {
  const path = fileURLToPath(new URL(`../fixtures/protocol/${name}`, import.meta.url));
  return Buffer.from(readFileSync(path, 'utf8').replace(/\s+/g, ''), 'hex');
}

export function hex(text: string): Buffer {
  return Buffer.from(text.replace(/\s+/g, ''), 'hex');
}
