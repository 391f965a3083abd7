/**
 * Watches (docs/watches.md): what the API asks of them. A watch is created within the
 * caps (watch-store.ts counts and inserts in one step), proven by its owner (verification.ts),
 * checked by the check loop (scheduler.ts, checks.ts) and its events delivered by the delivery
 * loop (delivery.ts). Secrets and client keys come from keys.ts; what GET shows is the route's
 * business (http/routes/watch-view.ts).
 */
import { randomUUID } from 'node:crypto';
import type { WatchSettings } from '../config/index.js';
import type { Clock } from '../core/clock.js';
import { ObserverError } from '../core/errors.js';
import { DEFAULT_PORTS } from '../core/types.js';
import { parseAddress } from '../resolve/index.js';
import { serverId } from '../status/server-id.js';
import { NEW_WATCH_STATE, type CapRefusal, type WatchDeliveryRow, type WatchRow, type WatchStore } from '../store/watches/watch-store.js';
import { DELIVERY_LOG_SIZE, type DeliveryLoop } from './delivery.js';
import type { WatchKeys } from './keys.js';
import type { ServerLook } from './look.js';
import { eventBody, lastKnownSnapshot, snapshotOf } from './payload.js';
import { hashToken, newManagementToken, newVerificationToken, tokenMatches } from './tokens.js';
import { DNS_DEADLINE_MS, type WatchVerifier } from './verification.js';
import { parseWebhookUrl, resolveWebhook, type WebhookAllowlist, type WebhookResolver, type WebhookResult } from './webhook.js';

export type WebhookKind = 'discord' | 'json';

export interface NewWatchRequest {
  address: string;
  edition: 'java' | 'bedrock';
  webhook: { kind: WebhookKind; url: string };
  players_at_least?: number;
}

export interface WatchServiceDeps {
  store: WatchStore;
  keys: WatchKeys;
  verifier: WatchVerifier;
  deliveries: DeliveryLoop;
  look: ServerLook;
  /** The webhooks' resolver and allowlist (WEBHOOK_ALLOWLIST). */
  webhooks: { resolver: WebhookResolver; allowlist: WebhookAllowlist };
  clock: Clock;
  settings: WatchSettings;
  /** PUBLIC_URL: the base of links in deliveries and of `page_url`; null: no links. */
  publicUrl: string | null;
  /** Between two checks of a watch. */
  intervalMs: number;
  /** Makes verification tokens (default: random); tests give a fixed one that a DNS zone can hold. */
  verificationToken?: () => string;
}

/** What a new watch answers once: its secrets beside the watch. */
export interface CreatedWatch {
  watch: WatchRow;
  managementToken: string;
  signingSecret: string | null;
}

export class WatchService {
  constructor(private readonly deps: WatchServiceDeps) {}

  get publicUrl(): string | null {
    return this.deps.publicUrl;
  }

  /**
   * Creates an unverified watch for a client, given by its network (IPv4 address or IPv6
   * /48, never stored as it is); 409 or 429 when a cap refuses it.
   */
  async create(input: NewWatchRequest, clientNetwork: string): Promise<CreatedWatch> {
    const { store, clock, settings, keys, webhooks } = this.deps;
    const parsed = parseAddress(input.address);
    const address = parsed.port === null ? parsed.host : parsed.host.includes(':') ? `[${parsed.host}]:${parsed.port}` : `${parsed.host}:${parsed.port}`;
    const url = parseWebhookUrl(input.webhook.url);
    await resolveWebhook(url, webhooks.resolver, webhooks.allowlist, AbortSignal.timeout(DNS_DEADLINE_MS));
    const now = clock.now();
    const token = newManagementToken();
    const watch: WatchRow = {
      id: randomUUID(),
      token_hash: hashToken(token),
      verify_token: (this.deps.verificationToken ?? newVerificationToken)(),
      address,
      host: parsed.host,
      edition: input.edition,
      webhook_kind: input.webhook.kind,
      webhook_url: url.href,
      players_at_least: input.players_at_least ?? null,
      public_url: this.deps.publicUrl ?? '',
      client_hash: await keys.clientHash(clientNetwork),
      server_key: serverId(input.edition, parsed.host, parsed.port ?? DEFAULT_PORTS[input.edition]),
      created_at: now,
      expires_at: now + settings.verifyHours * 3_600_000,
      next_check_at: now + this.deps.intervalMs,
      txt_name: await this.provisionalTxtName(address, input.edition, parsed.kind === 'hostname' ? parsed.host : null),
      ...NEW_WATCH_STATE,
    };
    const refused = await store.insertWithinCaps(watch, settings);
    if (refused !== null) throw capError(refused, settings);
    return { watch, managementToken: token, signingSecret: watch.webhook_kind === 'json' ? await keys.signingSecret(watch.id) : null };
  }

  /** The TXT name as DNS tells it now, or `_observer.<host>` while it cannot (the next look corrects it). */
  private async provisionalTxtName(address: string, edition: string, host: string | null): Promise<string | null> {
    try {
      return await this.deps.verifier.txtName({ address, edition }, AbortSignal.timeout(DNS_DEADLINE_MS));
    } catch {
      return host === null ? null : `_observer.${host}`;
    }
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

  /** Looks for the owner's proof now; the watch as it is afterwards, or 409/429 when a cap keeps it unverified. */
  async verifyNow(watch: WatchRow): Promise<WatchRow> {
    const { watch: after, refused } = await this.deps.verifier.verifyNow(watch);
    if (refused !== null) throw capError(refused, this.deps.settings);
    return after;
  }

  /** One test delivery (event `test`, sequence 0, not retried): 409 `not_verified` before verification or while paused. */
  async test(watch: WatchRow): Promise<WebhookResult> {
    if (watch.verified_at === null || watch.paused_at !== null) {
      throw new ObserverError('not_verified', 409, 'Nothing is sent to a webhook before the watch is verified, nor while it is paused.');
    }
    return this.deps.deliveries.test(watch, async () => {
      const status = await this.deps.look.now(watch);
      const server = status ? snapshotOf(status) : lastKnownSnapshot(watch);
      return eventBody(watch, { kind: 'test', sequence: 0, at: this.deps.clock.now(), server }, this.deps.publicUrl);
    });
  }

  /** The newest delivery attempts of a watch and how many of its events are pending. */
  async details(watch: WatchRow): Promise<{ deliveries: WatchDeliveryRow[]; pending: number }> {
    const { store } = this.deps;
    const [deliveries, pending] = await Promise.all([store.deliveries(watch.id, DELIVERY_LOG_SIZE), store.pendingCount(watch.id)]);
    return { deliveries, pending };
  }
}

/** The answer to a creation or verification a cap refused. */
function capError(refused: CapRefusal, settings: WatchSettings): ObserverError {
  switch (refused) {
    case 'unverified':
      return new ObserverError(
        'too_many_unverified',
        409,
        `A client may hold ${settings.unverifiedPerClient} unverified watches at a time: verify or delete one first.`,
      );
    case 'client':
      return new ObserverError('too_many_watches', 409, `A client may hold ${settings.perClient} watches: delete one first.`);
    case 'server':
      return new ObserverError(
        'too_many_server_watches',
        409,
        `This server already has ${settings.perServer} verified watches, as many as Observer keeps for one server: delete one first.`,
      );
    case 'total':
      return new ObserverError(
        'watch_capacity',
        429,
        `This Observer holds as many verified watches (${settings.max}) as its check budget can look at every ${settings.intervalMinutes} minutes. Retry later, when watches have ended.`,
        { headers: { 'Retry-After': '3600' } },
      );
  }
}
