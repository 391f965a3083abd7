import { ProbeError } from '../../src/core/errors.js';
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

/** The ProbeError code `fn` throws, or undefined when it does not throw. */
export function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return error instanceof ProbeError ? error.code : `not a ProbeError: ${String(error)}`;
  }
  return undefined;
}
