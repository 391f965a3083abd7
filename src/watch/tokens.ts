/**
 * The secrets of a watch (docs/watches.md):
 *  - the management token (32 random bytes, base64url) is shown once; only its SHA-256 is
 *    stored, and a presented token is compared with it in constant time;
 *  - the verification token is public by design (it goes into a MOTD or a TXT record);
 *  - the signing secret of a generic JSON webhook is derived, never stored (keys.ts).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

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

/** A random key for the keys of watch/keys.ts, when WATCH_SECRET is not set. */
export function newSigningKey(): string {
  return randomBytes(32).toString('base64url');
}
