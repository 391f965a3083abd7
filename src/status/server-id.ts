import { hash as digest } from 'node:crypto';
import type { Edition } from '../core/types.js';

/** Namespace for Observer's server ids (a fixed random UUID: changing it changes every id). */
const OBSERVER_NAMESPACE = '3f1c8a52-6d0e-4b7e-9a57-0c2f9e4d8b61';

const namespaceBytes = (namespace: string) => Buffer.from(namespace.replace(/-/g, ''), 'hex');
const OBSERVER_NAMESPACE_BYTES = namespaceBytes(OBSERVER_NAMESPACE);

/** RFC 9562 §5.5 UUID version 5: SHA-1 of namespace + name, version and variant bits set. */
export function uuidV5(name: string, namespace = OBSERVER_NAMESPACE): string {
  const ns = namespace === OBSERVER_NAMESPACE ? OBSERVER_NAMESPACE_BYTES : namespaceBytes(namespace);
  // The one-shot hash: no Hash object per id (a new server's id is computed on its first look-up).
  const hash = digest('sha1', Buffer.concat([ns, Buffer.from(name, 'utf8')]), 'buffer');
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** `server_id`: UUID v5 of the normalised `edition:host:port`, stable across restarts (docs/api.md). */
export function serverId(edition: Edition, host: string, port: number): string {
  return uuidV5(`${edition}:${host}:${port}`);
}
