/**
 * The keys watches derive secrets from, and their storage: WATCH_SECRET when set, else random
 * keys made once and kept in the database (`watch_keys`), so every instance derives alike.
 *  - A `json` watch's signing secret is HMAC-SHA256 of its id under the signing key, shown as
 *    `whsec_<base64>` (Standard Webhooks): never stored, the same on every instance.
 *  - A client (its IPv4 address, or its IPv6 /48) is kept with its watches as scrypt of its
 *    network under the client key, so that WATCHES_PER_CLIENT and fair scheduling hold across
 *    days and instances. scrypt at Node's default cost makes testing guesses slow for someone
 *    who holds the database and its key (each guess costs as much as one creation did); the
 *    results are memoised in memory, so a client creating watches pays it once.
 */
import { createHmac, scrypt } from 'node:crypto';
import { promisify } from 'node:util';
import { LRUCache } from 'lru-cache';
import type { WatchStore } from '../store/watches/watch-store.js';
import { newSigningKey } from './tokens.js';

const scryptAsync = promisify(scrypt) as (password: string, salt: string, length: number) => Promise<Buffer>;

/** Client networks whose hash is kept for reuse (the least recently used go first). */
const CLIENT_MEMO = 10_000;

export class WatchKeys {
  private readonly stored = new Map<string, Promise<string>>();
  private readonly clients = new LRUCache<string, string>({ max: CLIENT_MEMO });

  constructor(
    private readonly store: WatchStore,
    /** WATCH_SECRET, or null. */
    private readonly secret: string | null,
  ) {}

  /** The `whsec_…` signing secret of a watch. */
  async signingSecret(watchId: string): Promise<string> {
    const key = await this.key('signing');
    return `whsec_${createHmac('sha256', key).update(`observer-watch:${watchId}`).digest('base64')}`;
  }

  /** The opaque, stable key of a client network (`clientNetwork(ip, 48)`). */
  async clientHash(network: string): Promise<string> {
    const known = this.clients.get(network);
    if (known !== undefined) return known;
    const salt = await this.key('client');
    const hash = (await scryptAsync(network, salt, 24)).toString('base64url');
    this.clients.set(network, hash);
    return hash;
  }

  /** A key by its use: derived from WATCH_SECRET, or the one kept in the database. */
  private key(name: 'signing' | 'client'): Promise<string> {
    if (this.secret !== null) {
      return Promise.resolve(name === 'signing' ? this.secret : createHmac('sha256', this.secret).update(`observer-watch-${name}`).digest('base64url'));
    }
    let key = this.stored.get(name);
    if (key === undefined) {
      key = this.store.key(name, newSigningKey);
      key.catch(() => this.stored.delete(name));
      this.stored.set(name, key);
    }
    return key;
  }
}
