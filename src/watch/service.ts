/**
 * Watches (docs/api.md, "Watches"): created through the API, proven by their owner (a token in
 * the server's MOTD or in a TXT record at `_observer.<host>`), then checked every
 * WATCH_INTERVAL_MINUTES through the status service's look-up (its cache, coalescing, budgets
 * and guard apply). A state change becomes an event row in the database, inserted by the one
 * instance whose check saved it; each event is then delivered by whichever instance leases
 * it, with retries, and every attempt is logged. Nothing is delivered before verification.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { WatchSettings } from '../config/index.js';
import type { Clock } from '../core/clock.js';
import { BadRequestError, HostNotFoundError, ObserverError, TargetRefusedError } from '../core/errors.js';
import type { ServerStatus } from '../core/types.js';
import { parseAddress } from '../resolve/index.js';
import type { DampingSettings } from '../status/damping.js';
import type { StatusLookup } from '../status/types.js';
import { NEW_WATCH_STATE, type WatchEventRow, type WatchRow, type WatchStore } from '../store/watch-store.js';
import { discordBody, serverPageUrl, snapshotOf, type ServerSnapshot, type WatchEventBody, type WatchEventKind } from './payload.js';
import { hashToken, newManagementToken, newSigningKey, newVerificationToken, signBody, signingSecret, tokenMatches, verificationRecord } from './tokens.js';
import { nextMemory, type WatchState } from './transitions.js';
import { failureReason, parseWebhookUrl, postWebhook, resolveWebhook, type WebhookResolver, type WebhookResult } from './webhook.js';

export type WebhookKind = 'discord' | 'json';

export interface NewWatchRequest {
  address: string;
  edition: 'java' | 'bedrock';
  webhook: { kind: WebhookKind; url: string };
  players_at_least?: number;
}

export interface WatchResolver extends WebhookResolver {
  txt(name: string, signal: AbortSignal): Promise<string[]>;
}

export interface WatchTiming {
  /** Between two checks of a watch (default WATCH_INTERVAL_MINUTES). */
  intervalMs?: number;
  /** First retry of a failed delivery; each next one waits four times longer (default 30 s). */
  retryBaseMs?: number;
  /** After a stale answer (a refresh under way), when the watch is looked at again (default 10 s). */
  recheckMs?: number;
  /** Makes verification tokens (default: random); tests give a fixed one that a DNS zone can hold. */
  verificationToken?: () => string;
}

export interface WatchServiceDeps {
  store: WatchStore;
  status: StatusLookup;
  resolver: WatchResolver;
  clock: Clock;
  settings: WatchSettings;
  damping: DampingSettings;
  publicUrl: string | null;
  /** PING_TIMEOUT_MS: how long a verification waits for the refresh a stale answer started. */
  pingTimeoutMs: number;
  timing?: WatchTiming;
  onError?: (error: unknown, context: string) => void;
}

/** Attempts kept in a watch's delivery log. */
export const DELIVERY_LOG_SIZE = 20;
/** The longest wait between two attempts of one delivery. */
const RETRY_MAX_MS = 60 * 60_000;
/** Deadline of a DNS look-up (webhook host, TXT record). */
const DNS_DEADLINE_MS = 5_000;

export class WatchService {
  private signingKey: Promise<string> | null = null;
  readonly intervalMs: number;
  private readonly retryBaseMs: number;
  private readonly recheckMs: number;

  constructor(private readonly deps: WatchServiceDeps) {
    this.intervalMs = deps.timing?.intervalMs ?? deps.settings.intervalMinutes * 60_000;
    this.retryBaseMs = deps.timing?.retryBaseMs ?? 30_000;
    this.recheckMs = deps.timing?.recheckMs ?? 10_000;
  }

  /** Creates an unverified watch for a client (its opaque key); the secrets in the answer are shown once. */
  async create(input: NewWatchRequest, clientKey: string, origin: string) {
    const { store, clock, settings } = this.deps;
    const parsed = parseAddress(input.address);
    const address = parsed.port === null ? parsed.host : parsed.host.includes(':') ? `[${parsed.host}]:${parsed.port}` : `${parsed.host}:${parsed.port}`;
    const url = parseWebhookUrl(input.webhook.url);
    refuseLocalNames(url);
    await resolveWebhook(url, this.deps.resolver, AbortSignal.timeout(DNS_DEADLINE_MS));
    const clientHash = createHash('sha256').update('observer-watch-client\0').update(clientKey).digest('hex');
    if ((await store.unverifiedCount(clientHash)) >= settings.unverifiedPerClient) {
      throw new ObserverError(
        'too_many_unverified',
        409,
        `A client may hold ${settings.unverifiedPerClient} unverified watches at once: verify or delete one first.`,
      );
    }
    const now = clock.now();
    const token = newManagementToken();
    const watch: WatchRow = {
      id: randomUUID(),
      token_hash: hashToken(token),
      verify_token: (this.deps.timing?.verificationToken ?? newVerificationToken)(),
      address,
      host: parsed.host,
      edition: input.edition,
      webhook_kind: input.webhook.kind,
      webhook_url: url.href,
      players_at_least: input.players_at_least ?? null,
      public_url: this.deps.publicUrl ?? origin,
      client_hash: clientHash,
      created_at: now,
      expires_at: now + settings.verifyHours * 3_600_000,
      next_check_at: now + this.intervalMs,
      ...NEW_WATCH_STATE,
    };
    await store.insert(watch);
    return {
      id: watch.id,
      management_token: token,
      ...(watch.webhook_kind === 'json' ? { signing_secret: signingSecret(await this.key(), watch.id) } : {}),
      watch: await this.view(watch),
    };
  }

  /** The watch if `token` manages it: 404 without the watch, 401 with a wrong or missing token. */
  async authorised(id: string, token: string | null): Promise<WatchRow> {
    const watch = /^[0-9a-f-]{36}$/.test(id) ? await this.deps.store.get(id) : undefined;
    if (!watch) throw new ObserverError('watch_not_found', 404, 'There is no watch with this id (it may have expired or been deleted).');
    if (token === null || !tokenMatches(token, watch.token_hash)) {
      throw new ObserverError('unauthorized', 401, 'This request needs the watch\'s management token as `Authorization: Bearer <token>`.', {
        headers: { 'WWW-Authenticate': 'Bearer' },
      });
    }
    return watch;
  }

  async delete(watch: WatchRow): Promise<void> {
    await this.deps.store.delete(watch.id);
  }

  /** What GET shows of a watch: never its management token or signing secret. */
  async view(watch: WatchRow) {
    const { store } = this.deps;
    const [deliveries, pending] = await Promise.all([store.deliveries(watch.id, DELIVERY_LOG_SIZE), store.pendingCount(watch.id)]);
    const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
    return {
      id: watch.id,
      address: watch.address,
      edition: watch.edition as 'java' | 'bedrock',
      webhook: { kind: watch.webhook_kind as WebhookKind, host: new URL(watch.webhook_url).host },
      players_at_least: watch.players_at_least,
      page_url: serverPageUrl(watch.public_url, watch.address),
      created_at: iso(watch.created_at)!,
      verification: {
        verified: watch.verified_at !== null,
        method: watch.verified_by as 'motd' | 'dns' | null,
        verified_at: iso(watch.verified_at),
        expires_at: iso(watch.expires_at),
        token: watch.verify_token,
        txt_name: isIpHost(watch.host) ? null : `_observer.${watch.host}`,
        txt_value: isIpHost(watch.host) ? null : verificationRecord(watch.verify_token),
      },
      state: watch.state as WatchState,
      last_checked_at: iso(watch.last_checked_at),
      pending_deliveries: pending,
      deliveries: deliveries.map((d) => ({
        sequence: d.sequence,
        event: d.kind,
        attempt: d.attempt,
        at: new Date(d.at).toISOString(),
        status_code: d.status_code,
        error: d.error,
      })),
    };
  }

  /** Looks for the owner's proof now; the watch as it is afterwards. */
  async verifyNow(watch: WatchRow): Promise<WatchRow> {
    if (watch.verified_at !== null) return watch;
    const method = await this.proof(watch);
    if (method === null) return watch;
    const now = this.deps.clock.now();
    await this.deps.store.markVerified(watch.id, method, now);
    return (await this.deps.store.get(watch.id)) ?? watch;
  }

  /** `motd` when the server's MOTD holds the token, `dns` when `_observer.<host>` has the record, else null. */
  private async proof(watch: WatchRow): Promise<'motd' | 'dns' | null> {
    const status = await this.freshLook(watch);
    if (status && status.online && status.motd && (status.motd.clean.includes(watch.verify_token) || status.motd.raw.includes(watch.verify_token))) {
      return 'motd';
    }
    if (isIpHost(watch.host)) return null;
    try {
      const records = await this.deps.resolver.txt(`_observer.${watch.host}`, AbortSignal.timeout(DNS_DEADLINE_MS));
      if (records.some((r) => r.trim() === verificationRecord(watch.verify_token))) return 'dns';
    } catch (error) {
      this.deps.onError?.(error, 'watch verification');
    }
    return null;
  }

  /**
   * The server's status, waiting (within PING_TIMEOUT_MS) for the refresh a stale answer
   * started: an owner who just put the token in the MOTD is answered from that refresh.
   */
  private async freshLook(watch: WatchRow): Promise<ServerStatus | null> {
    const deadline = Date.now() + this.deps.pingTimeoutMs + 500;
    let status = await this.look(watch);
    while (status?.stale && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = await this.look(watch);
    }
    return status;
  }

  /** The server's status as the status service answers it; null when it refuses (busy, budget spent). */
  private async look(watch: WatchRow): Promise<ServerStatus | null> {
    try {
      const answer = await this.deps.status.lookup(watch.address, watch.edition === 'bedrock' ? 'bedrock' : 'java', { background: true });
      return answer.status;
    } catch (error) {
      // A name gone from DNS, or now resolving to a refused address: the server is not reachable.
      if (error instanceof HostNotFoundError || error instanceof TargetRefusedError) {
        const failed = { online: false, stale: false, checked_at: new Date(this.deps.clock.now()).toISOString() };
        return { ...failed, error: error instanceof HostNotFoundError ? 'host not found' : 'address refused' } as ServerStatus;
      }
      if (error instanceof ObserverError) return null;
      throw error;
    }
  }

  /**
   * One scheduled check: verification for an unverified watch, else the server's state and,
   * when it changed, the event. A stale answer (a refresh under way) decides nothing: the
   * watch is looked at again shortly.
   */
  async check(watch: WatchRow): Promise<void> {
    if (watch.verified_at === null) {
      await this.verifyNow(watch);
      return;
    }
    const status = await this.look(watch);
    const now = this.deps.clock.now();
    const failing = dampedFailure(status);
    if (failing && watch.state === 'online') {
      // Damped by the status service: its failure streak becomes the watch's, so the offline
      // answer that ends damping is delivered at once and damping is applied only once.
      const memory = { state: watch.state, failures: failing.failures, fail_since: failing.since, above: watch.above, last_checked_at: watch.last_checked_at };
      await this.deps.store.saveObservation(watch, memory, null);
      await this.deps.store.setNextCheck(watch.id, now + this.recheckMs);
      return;
    }
    if (status === null || status.stale) {
      await this.deps.store.setNextCheck(watch.id, now + this.recheckMs);
      return;
    }
    // The time of the ping the answer represents: an answer no newer than the last one used
    // (another instance's cache may be older) tells nothing new and is not used.
    const checkedAt = Number.isFinite(Date.parse(status.checked_at)) ? Date.parse(status.checked_at) : now;
    if (watch.last_checked_at !== null && checkedAt <= watch.last_checked_at) {
      await this.deps.store.setNextCheck(watch.id, now + this.recheckMs);
      return;
    }
    const memory = { state: watch.state as WatchState, failures: watch.failures, fail_since: watch.fail_since, above: watch.above };
    const seen = { online: status.online, players: status.players?.online ?? null };
    const next = nextMemory(memory, seen, watch.players_at_least, this.deps.damping, checkedAt);
    const event =
      next.event === null
        ? null
        : { kind: next.event, body: this.eventBody(watch, next.event, watch.sequence + 1, snapshotOf(status), checkedAt, next.memory.fail_since), now };
    await this.deps.store.saveObservation(watch, { ...next.memory, last_checked_at: checkedAt }, event);
  }

  private eventBody(watch: WatchRow, kind: WatchEventKind, sequence: number, server: ServerSnapshot, now: number, downSince: number | null = null): string {
    const body: WatchEventBody = {
      event: kind,
      watch_id: watch.id,
      sequence,
      address: watch.address,
      edition: watch.edition as 'java' | 'bedrock',
      occurred_at: new Date(now).toISOString(),
      down_since: kind === 'offline' && downSince !== null ? new Date(downSince).toISOString() : null,
      threshold: kind === 'players_at_least' ? watch.players_at_least : null,
      server,
      url: serverPageUrl(watch.public_url, watch.address),
    };
    return JSON.stringify(body);
  }

  /** Delivers the events that are due (each leased by one instance at a time). */
  async deliverDue(limit = 20): Promise<number> {
    const { store, clock, settings } = this.deps;
    const now = clock.now();
    let attempted = 0;
    for (const event of await store.dueEvents(now, limit)) {
      if (!(await store.leaseEvent(event, now, now + settings.deliveryTimeoutMs + DNS_DEADLINE_MS + 5_000))) continue;
      const watch = await store.get(event.watch_id);
      if (!watch) continue;
      await this.attempt(watch, event);
      attempted += 1;
    }
    return attempted;
  }

  private async attempt(watch: WatchRow, event: WatchEventRow): Promise<void> {
    const { store, clock, settings } = this.deps;
    const result = await this.send(watch, event.body);
    const attempt = event.attempts + 1;
    const now = clock.now();
    const log = { watch_id: watch.id, sequence: event.sequence, kind: event.kind, attempt, at: now, status_code: result.statusCode, error: result.error };
    if (result.error === null) {
      await store.finishAttempt(log, { outcome: 'delivered' }, DELIVERY_LOG_SIZE);
    } else if (attempt >= settings.deliveryAttempts || !retryable(result)) {
      await store.finishAttempt(log, { outcome: 'gave_up' }, DELIVERY_LOG_SIZE);
    } else {
      const wait = Math.min(RETRY_MAX_MS, this.retryBaseMs * 4 ** (attempt - 1));
      await store.finishAttempt(log, { retryAt: now + wait }, DELIVERY_LOG_SIZE);
    }
  }

  /** One test delivery to a verified watch's webhook, logged like the others (sequence 0). */
  async test(watch: WatchRow): Promise<WebhookResult> {
    if (watch.verified_at === null) {
      throw new ObserverError('not_verified', 409, 'Nothing is sent to a webhook before the watch is verified.');
    }
    const status = await this.look(watch);
    const now = this.deps.clock.now();
    const snapshot: ServerSnapshot = status
      ? snapshotOf(status)
      : { online: watch.state === 'online', players_online: null, players_max: null, version: null, motd: null, error: null, error_code: null };
    const result = await this.send(watch, this.eventBody(watch, 'test', 0, snapshot, now));
    await this.deps.store.logAttempt(
      { watch_id: watch.id, sequence: 0, kind: 'test', attempt: 1, at: now, status_code: result.statusCode, error: result.error },
      DELIVERY_LOG_SIZE,
    );
    return result;
  }

  /** POSTs an event body in the watch's format; the guard and DNS are consulted anew each time. */
  private async send(watch: WatchRow, body: string): Promise<WebhookResult> {
    let target;
    try {
      const url = parseWebhookUrl(watch.webhook_url);
      refuseLocalNames(url);
      target = await resolveWebhook(url, this.deps.resolver, AbortSignal.timeout(DNS_DEADLINE_MS));
    } catch (error) {
      return { statusCode: null, error: failureReason(error) };
    }
    const parsed = JSON.parse(body) as WatchEventBody;
    const headers: Record<string, string> = {
      'user-agent': 'Observer-Webhook/1',
      'x-observer-event': parsed.event,
      'x-observer-delivery': `${watch.id}:${parsed.sequence}`,
    };
    if (watch.webhook_kind === 'discord') {
      return postWebhook(target, JSON.stringify(discordBody(parsed)), headers, this.deps.settings.deliveryTimeoutMs);
    }
    headers['x-observer-signature'] = signBody(signingSecret(await this.key(), watch.id), body);
    return postWebhook(target, body, headers, this.deps.settings.deliveryTimeoutMs);
  }

  /** The key signing secrets derive from: WATCH_SECRET, or one made once and kept in the database. */
  private key(): Promise<string> {
    const { secret } = this.deps.settings;
    if (secret !== null) return Promise.resolve(secret);
    this.signingKey ??= this.deps.store.key('signing', newSigningKey).catch((error: unknown) => {
      this.signingKey = null;
      throw error;
    });
    return this.signingKey;
  }

  /** Unverified watches past their window are deleted. */
  expire(): Promise<number> {
    return this.deps.store.expireUnverified(this.deps.clock.now());
  }
}

/** A server given by IP address has no name to hold a TXT record. */
function isIpHost(host: string): boolean {
  return /^[0-9.]+$/.test(host) || host.includes(':');
}

/** A 4xx other than 408 and 429 will not change by itself: the delivery is given up. */
function retryable(result: WebhookResult): boolean {
  const code = result.statusCode;
  if (code === null || code >= 500) return true;
  return code === 408 || code === 429;
}

/** `localhost` and `*.localhost` name loopback (RFC 6761 §6.3), whatever a DNS server says. */
function refuseLocalNames(url: URL): void {
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) {
    throw new BadRequestError(
      'webhook_refused',
      'The webhook URL resolves to a non-public IP address (loopback, private, link-local or reserved); Observer only sends to public addresses.',
    );
  }
}

/** The failure streak of a damped answer (the last success, stale, with `failing`); null otherwise. */
function dampedFailure(status: ServerStatus | null): { failures: number; since: number } | null {
  const failing = status?.stale ? (status.failing as { failures?: unknown; since?: unknown } | undefined) : undefined;
  if (typeof failing?.failures !== 'number' || typeof failing.since !== 'string') return null;
  const since = Date.parse(failing.since);
  return Number.isFinite(since) ? { failures: failing.failures, since } : null;
}
