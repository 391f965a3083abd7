/**
 * What a delivery says (docs/watches.md): one event body, sent as it is to a generic
 * JSON webhook, or turned into a Discord "Execute Webhook" body with one embed.
 */
import type { ServerStatus } from '../core/types.js';
import type { WatchRow } from '../store/watches/watch-store.js';

/** `paused`: the owner's proof has not been seen for WATCH_PROOF_GRACE_DAYS; nothing else is sent until it is. */
export type WatchEventKind = 'online' | 'offline' | 'players_at_least' | 'paused' | 'test';

/** The server as a delivery shows it. */
export interface ServerSnapshot {
  online: boolean;
  players_online: number | null;
  players_max: number | null;
  version: string | null;
  motd: string | null;
  /** The status `error` of an offline server. */
  error: string | null;
  /** The status `error_code` of an offline server (docs/api.md, "Why a server is offline"). */
  error_code: string | null;
}

/** The body of a generic JSON delivery. */
export interface WatchEventBody {
  event: WatchEventKind;
  watch_id: string;
  /** 1, 2, 3... per watch; 0 for a test delivery. With the watch id, it names the event. */
  sequence: number;
  address: string;
  edition: 'java' | 'bedrock';
  /** When the change was seen (ISO 8601). */
  occurred_at: string;
  /** For `offline`: when the server stopped answering (the first failed check); null otherwise. */
  down_since: string | null;
  /** The threshold crossed, for `players_at_least`; null otherwise. */
  threshold: number | null;
  server: ServerSnapshot;
  /** The server's page on this Observer, under PUBLIC_URL; null when it is not set. */
  url: string | null;
}

const MOTD_MAX = 512;

export function snapshotOf(status: ServerStatus): ServerSnapshot {
  return {
    online: status.online,
    players_online: status.players?.online ?? null,
    players_max: status.players?.max ?? null,
    version: status.version?.name ?? null,
    motd: status.motd ? status.motd.clean.slice(0, MOTD_MAX) : null,
    error: status.online ? null : (status.error ?? null),
    error_code: status.online ? null : (status.error_code ?? null),
  };
}

/** `{base}/server/{address}` (the address percent-encoded as one path segment); null without a base. */
export function serverPageUrl(base: string | null, address: string): string | null {
  if (base === null) return null;
  return `${base.replace(/\/+$/, '')}/server/${encodeURIComponent(address)}`;
}

/** The snapshot of a server nothing fresh is known of: its last state as the watch saw it. */
export function lastKnownSnapshot(watch: WatchRow): ServerSnapshot {
  return { online: watch.state === 'online', players_online: null, players_max: null, version: null, motd: null, error: null, error_code: null };
}

/** The JSON of one event of `watch`, linking to its page under `publicUrl` (PUBLIC_URL) when set. */
export function eventBody(
  watch: WatchRow,
  event: { kind: WatchEventKind; sequence: number; at: number; server: ServerSnapshot; downSince?: number | null },
  publicUrl: string | null,
): string {
  const { kind, sequence, at, server, downSince = null } = event;
  const body: WatchEventBody = {
    event: kind,
    watch_id: watch.id,
    sequence,
    address: watch.address,
    edition: watch.edition as 'java' | 'bedrock',
    occurred_at: new Date(at).toISOString(),
    down_since: kind === 'offline' && downSince !== null ? new Date(downSince).toISOString() : null,
    threshold: kind === 'players_at_least' ? watch.players_at_least : null,
    server,
    url: serverPageUrl(publicUrl, watch.address),
  };
  return JSON.stringify(body);
}

/**
 * Discord's documented limits of an embed (Discord developer docs, "Execute Webhook" and
 * "Embed Limits"): title 256, description 4096, 25 fields of name 256 and value 1024, footer
 * text 2048, author name 256, 6000 characters in all the embeds of a message; content 2000.
 */
export const DISCORD_LIMITS = { title: 256, description: 4096, fields: 25, fieldName: 256, fieldValue: 1024, footer: 2048, total: 6000, username: 80 };

const COLOURS: Record<WatchEventKind, number> = { online: 0x2e9d57, offline: 0xd1383d, players_at_least: 0x3a7bd5, paused: 0xc27c0e, test: 0x888888 };

const HEADLINES: Record<WatchEventKind, string> = {
  online: 'is back online',
  offline: 'went offline',
  players_at_least: 'reached the player threshold',
  paused: 'watch paused: proof of ownership not seen',
  test: 'test delivery',
};

/** At most `max` UTF-16 units (so at most `max` characters however they are counted), never half a surrogate pair. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  if (/[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end -= 1;
  return `${text.slice(0, end)}…`;
}

/** The Discord webhook body of an event: one embed, every text within Discord's limits. */
export function discordBody(event: WatchEventBody): Record<string, unknown> {
  const { server } = event;
  const players = server.players_online === null ? 'unknown' : `${server.players_online} / ${server.players_max ?? '?'}`;
  const fields = [
    { name: 'State', value: server.online ? 'Online' : cut(`Offline${server.error ? ` (${server.error})` : ''}`, 200), inline: true },
    { name: 'Players', value: players, inline: true },
    { name: 'Version', value: cut(server.version ?? 'unknown', 200), inline: true },
  ];
  if (event.threshold !== null) fields.push({ name: 'Threshold', value: `${event.threshold} players`, inline: true });
  const title = cut(`${event.address} ${HEADLINES[event.event]}`, DISCORD_LIMITS.title);
  const description = cut(server.motd && server.motd.trim() !== '' ? server.motd : event.address, 1000);
  const footer = cut(`Observer watch ${event.watch_id} · event ${event.sequence}`, DISCORD_LIMITS.footer);
  return {
    username: 'Observer',
    allowed_mentions: { parse: [] },
    embeds: [
      {
        title,
        description,
        ...(event.url !== null ? { url: event.url } : {}),
        color: COLOURS[event.event],
        fields,
        footer: { text: footer },
        timestamp: event.occurred_at,
      },
    ],
  };
}
