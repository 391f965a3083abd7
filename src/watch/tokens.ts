/**
 * The secrets of a watch (docs/api.md, "Watches"):
 *  - the management token (32 random bytes, base64url) is shown once; only its SHA-256 is
 *    stored, and a presented token is compared with it in constant time;
 *  - the verification token is public by design (it goes into a MOTD or a TXT record);
 *  - the signing secret of a generic JSON webhook is HMAC-SHA256 of the watch id under the
 *    service's key (WATCH_SECRET, or one kept in the database), so it is never stored and every
 *    instance derives the same one.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export function newManagementToken(): string {
  return randomBytes(32).toString('base64url');
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Whether `token` is the one whose hash is stored (constant time over the hashes). */
export function tokenMatches(token: string, storedHash: string): boolean {
  const presented = createHash('sha256').update(token).digest();
  const stored = Buffer.from(storedHash, 'hex');
  return stored.length === presented.length && timingSafeEqual(presented, stored);
}

/** A verification token: short enough for a MOTD line, 80 random bits. */
export function newVerificationToken(): string {
  return `observer-${randomBytes(10).toString('hex')}`;
}

/** The TXT record value that proves ownership at `_observer.<host>`. */
export function verificationRecord(token: string): string {
  return `observer-verify=${token}`;
}

/** A random key for signing secrets, when WATCH_SECRET is not set. */
export function newSigningKey(): string {
  return randomBytes(32).toString('base64url');
}

/** The watch's signing secret: hex HMAC-SHA256 of its id under the service's key. */
export function signingSecret(key: string, watchId: string): string {
  return createHmac('sha256', key).update(`observer-watch:${watchId}`).digest('hex');
}

/** `X-Observer-Signature`: `sha256=` and the hex HMAC-SHA256 of the exact body bytes under the secret. */
export function signBody(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}
