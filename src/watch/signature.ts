/**
 * Standard Webhooks (standardwebhooks.com): each delivery carries `webhook-id` (the same on
 * every attempt of one event, so a receiver can drop a repeat), `webhook-timestamp` (seconds,
 * this attempt's) and, for a `json` watch, `webhook-signature: v1,<base64 HMAC-SHA256 of
 * "<id>.<timestamp>.<body>">` under the watch's `whsec_` secret. Receivers verify with a
 * Standard Webhooks library in their language and refuse a timestamp outside their tolerance,
 * so a recorded delivery cannot be replayed later. Signed by the reference package itself.
 */
import { Webhook } from 'standardwebhooks';

/** The headers of one delivery attempt; `secret` null for a receiver that verifies nothing (Discord). */
export function deliveryHeaders(id: string, at: number, body: string, secret: string | null): Record<string, string> {
  const headers: Record<string, string> = {
    'user-agent': 'Observer-Webhook/1',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at / 1000)),
  };
  if (secret !== null) headers['webhook-signature'] = new Webhook(secret).sign(id, new Date(at), body);
  return headers;
}

/** The `webhook-id` of an event: the watch and its sequence. */
export function eventId(watchId: string, sequence: number): string {
  return `${watchId}_${sequence}`;
}
