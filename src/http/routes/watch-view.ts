/**
 * What GET /watches/{id} shows of a watch (docs/watches.md): never its management
 * token or signing secret, and of each delivery attempt only whether it was delivered,
 * refused (the webhook answered, not 2xx) or failed (no answer), never why a connection failed.
 */
import type { WatchDeliveryRow, WatchRow } from '../../store/watches/watch-store.js';
import { serverPageUrl } from '../../watch/payload.js';
import { verificationRecord } from '../../watch/tokens.js';
import type { WebhookKind } from '../../watch/index.js';
import type { AttemptResult } from '../../watch/webhook.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The outcome of a logged attempt, from what the log keeps. */
export function attemptResult(row: Pick<WatchDeliveryRow, 'error' | 'status_code'>): AttemptResult {
  if (row.error === null) return 'delivered';
  return row.status_code !== null ? 'refused' : 'failed';
}

export function watchView(watch: WatchRow, details: { deliveries: WatchDeliveryRow[]; pending: number }, publicUrl: string | null) {
  return {
    id: watch.id,
    address: watch.address,
    edition: watch.edition as 'java' | 'bedrock',
    webhook: { kind: watch.webhook_kind as WebhookKind, host: new URL(watch.webhook_url).host },
    players_at_least: watch.players_at_least,
    page_url: serverPageUrl(publicUrl, watch.address),
    created_at: iso(watch.created_at)!,
    verification: {
      verified: watch.verified_at !== null,
      method: watch.verified_by as 'motd' | 'dns' | null,
      verified_at: iso(watch.verified_at),
      expires_at: iso(watch.expires_at),
      token: watch.verify_token,
      txt_name: watch.txt_name,
      txt_value: watch.txt_name === null ? null : verificationRecord(watch.verify_token),
      proof_seen_at: iso(watch.proof_seen_at),
      paused_at: iso(watch.paused_at),
    },
    state: watch.state as 'unknown' | 'online' | 'offline',
    last_checked_at: iso(watch.last_checked_at),
    pending_deliveries: details.pending,
    deliveries: details.deliveries.map((d) => ({
      sequence: d.sequence,
      event: d.kind,
      attempt: d.attempt,
      at: new Date(d.at).toISOString(),
      result: attemptResult(d),
      status_code: d.status_code,
    })),
  };
}
