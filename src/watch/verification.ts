/**
 * The owner's proof (docs/watches.md): the watch's verification token in the MOTD of
 * the server the checks reach, or `observer-verify=<token>` in a TXT record at
 * `_observer.<name>`, where `<name>` is the name whose addresses the checks connect to: the
 * SRV target when the address has an SRV record, followed through CNAME records to the
 * canonical name. A TXT record at a name that only points elsewhere proves nothing of the
 * server it points at. A server given by IP address (or an SRV record pointing at one) has no
 * such name: MOTD only.
 *
 * A proof is not for ever: every check of a verified watch looks for the token in the MOTD
 * it read, and DNS is asked again at most every TXT_RECHECK_MS while the MOTD does not show
 * it. The checks (checks.ts) pause a watch whose proof was not seen for
 * WATCH_PROOF_GRACE_DAYS; a paused watch is looked at like an unverified one and resumes once
 * the proof is back.
 */
import { isIP } from 'node:net';
import type { Clock } from '../core/clock.js';
import type { ServerStatus } from '../core/types.js';
import { parseAddress } from '../resolve/index.js';
import type { ParsedAddress } from '../resolve/address.js';
import type { ResolvedTarget } from '../resolve/index.js';
import type { CapRefusal, WatchCaps, WatchObservation, WatchRow, WatchStore } from '../store/watches/watch-store.js';
import { motdHolds, type ServerLook } from './look.js';
import { verificationRecord } from './tokens.js';

/** What the proof's names are found with: the targets' resolver (TARGET_ALLOWLIST's guard). */
export interface ProofResolver {
  resolve(address: ParsedAddress, mode: 'java' | 'bedrock', signal: AbortSignal): Promise<ResolvedTarget>;
  txt(name: string, signal: AbortSignal): Promise<string[]>;
  cname(name: string, signal: AbortSignal): Promise<string | null>;
}

export type ProofMethod = 'motd' | 'dns';

/** Deadline of the DNS look-ups of one proof. */
export const DNS_DEADLINE_MS = 5_000;
/** How often a verified watch's TXT record is looked up again while its MOTD does not show the token. */
export const TXT_RECHECK_MS = 12 * 3_600_000;
/** CNAME records followed at most (a loop ends there). */
const MAX_CNAME_HOPS = 8;

export interface VerifierDeps {
  store: WatchStore;
  look: ServerLook;
  resolver: ProofResolver;
  clock: Clock;
  caps: WatchCaps;
  onError?: (error: unknown, context: string) => void;
}

export class WatchVerifier {
  constructor(private readonly deps: VerifierDeps) {}

  /**
   * `_observer.<name>` for the name the checks of `watch` connect to; null for a server given
   * by IP address. Rejects when DNS cannot tell (no records, failure, refused address).
   */
  async txtName(watch: Pick<WatchRow, 'address' | 'edition'>, signal: AbortSignal): Promise<string | null> {
    const parsed = parseAddress(watch.address);
    if (parsed.kind !== 'hostname') return null;
    const resolved = await this.deps.resolver.resolve(parsed, watch.edition === 'bedrock' ? 'bedrock' : 'java', signal);
    if (isIP(resolved.host) !== 0) return null;
    let name = resolved.host;
    for (let hop = 0; hop < MAX_CNAME_HOPS; hop += 1) {
      const alias = await this.deps.resolver.cname(name, signal);
      if (alias === null || alias === name) break;
      name = alias;
    }
    return `_observer.${name}`;
  }

  /**
   * Looks for the owner's proof now: an unverified watch becomes verified, a paused one
   * resumes. `refused` names the cap (WATCHES_PER_SERVER, WATCHES_MAX) that kept a proven
   * watch unverified.
   */
  async verifyNow(watch: WatchRow): Promise<{ watch: WatchRow; refused: CapRefusal | null }> {
    const { store, look, clock, caps } = this.deps;
    if (watch.verified_at !== null && watch.paused_at === null) return { watch, refused: null };
    const status = await look.fresh(watch);
    const txtName = await this.currentTxtName(watch);
    const method: ProofMethod | null = motdHolds(status, watch.verify_token) ? 'motd' : (await this.txtHolds(txtName, watch)) ? 'dns' : null;
    if (method === null) {
      if (txtName !== undefined && txtName !== watch.txt_name) await store.noteTxtName(watch.id, txtName);
      return { watch: { ...watch, txt_name: txtName === undefined ? watch.txt_name : txtName }, refused: null };
    }
    const refused = await store.markVerified(watch, method, clock.now(), txtName === undefined ? watch.txt_name : txtName, caps);
    return { watch: (await store.get(watch.id)) ?? watch, refused };
  }

  /**
   * What a check of a verified watch adds about its proof: seen now in the MOTD it read, or
   * in the TXT record when that is due for a look.
   */
  async stillProven(watch: WatchRow, status: ServerStatus): Promise<Partial<WatchObservation>> {
    const now = this.deps.clock.now();
    if (motdHolds(status, watch.verify_token)) return { proof_seen_at: now };
    if (watch.txt_checked_at !== null && now - watch.txt_checked_at < TXT_RECHECK_MS) return {};
    const txtName = await this.currentTxtName(watch);
    const found = await this.txtHolds(txtName, watch);
    return { txt_checked_at: now, ...(txtName !== undefined ? { txt_name: txtName } : {}), ...(found ? { proof_seen_at: now } : {}) };
  }

  /** The TXT name as DNS tells it now; undefined when DNS cannot tell (the last known one stays). */
  private async currentTxtName(watch: WatchRow): Promise<string | null | undefined> {
    try {
      return await this.txtName(watch, AbortSignal.timeout(DNS_DEADLINE_MS));
    } catch {
      return undefined;
    }
  }

  /** Whether `name` holds the watch's record; a failing look-up is no proof. */
  private async txtHolds(name: string | null | undefined, watch: WatchRow): Promise<boolean> {
    if (name === null || name === undefined) return false;
    try {
      const records = await this.deps.resolver.txt(name, AbortSignal.timeout(DNS_DEADLINE_MS));
      return records.some((record) => record.trim() === verificationRecord(watch.verify_token));
    } catch (error) {
      this.deps.onError?.(error, 'watch verification');
      return false;
    }
  }
}
