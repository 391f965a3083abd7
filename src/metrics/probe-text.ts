/**
 * The answer of `GET /probe` (docs/monitoring.md, "Probing Minecraft servers from Prometheus"):
 * one server's look-up as Prometheus series, in the text exposition format 0.0.4 or in
 * OpenMetrics 1.0 when the scraper asks for it. Pure: a probe's outcome in, text out.
 *
 * `probe_success` and `probe_duration_seconds` are named as the blackbox exporter names them, so
 * that the alerts and dashboards written for it read these too; the server's own series are
 * prefixed `minecraft_` and carry an `edition` label (`edition=auto` answers both editions).
 * Every label value is bounded: editions and offline reasons are fixed sets; a version name
 * comes from the server and is cut to LABEL_VALUE_MAX characters. Help texts hold no double
 * quote or backslash, which the two formats escape differently.
 *
 * Every family is a gauge in both formats, `minecraft_version_info` included (an info series
 * as Prometheus's own Go client writes one): OpenMetrics' `info` type is unknown to the text
 * format and to `promtool check metrics`, and Prometheus stores both alike.
 */
import { ERROR_MESSAGES, type ErrorCode } from '../core/errors.js';
import type { Edition, ServerStatus } from '../core/types.js';

export type ExpositionFormat = 'text' | 'openmetrics';

export const CONTENT_TYPES: Readonly<Record<ExpositionFormat, string>> = {
  text: 'text/plain; version=0.0.4; charset=utf-8',
  openmetrics: 'application/openmetrics-text; version=1.0.0; charset=utf-8',
};

/** Every value of `minecraft_offline_reason`'s `reason` label: the status route's `error_code`s. */
export const OFFLINE_REASONS = Object.keys(ERROR_MESSAGES) as ErrorCode[];

/** Characters of a label value kept: a version name comes from the server, which sends what it likes. */
export const LABEL_VALUE_MAX = 128;

/** What one edition's look-up told, as the series show it. */
export interface EditionReading {
  edition: Edition;
  online: boolean;
  /** Why it is offline (`error_code`); null when online. */
  reason: ErrorCode | null;
  players: { online: number; max: number } | null;
  latencyMs: number | null;
  version: { name: string; protocol: number } | null;
  /** null: ICMP is not available to the process (or the look-up never got an address). */
  icmp: boolean | null;
  /** The answer came from the cache (`X-Cache` HIT or STALE), not from a ping made for this probe. */
  cached: boolean;
  stale: boolean;
  /** Whether the Query answered; null when the probe did not ask for one. */
  query: boolean | null;
}

export interface ProbeOutcome {
  editions: EditionReading[];
  durationSeconds: number;
}

/** One edition's reading from its status answer. */
export function readingOf(edition: Edition, status: ServerStatus, cache: 'HIT' | 'MISS' | 'STALE', queried: boolean): EditionReading {
  const queryResult = status.queryResult as { error?: unknown } | undefined;
  return {
    edition,
    online: status.online,
    reason: status.online ? null : (status.error_code ?? 'internal_error'),
    players: status.players ? { online: status.players.online, max: status.players.max } : null,
    latencyMs: status.roundTripLatency,
    version: status.version,
    icmp: status.icmp,
    cached: cache !== 'MISS',
    stale: status.stale,
    query: queried ? queryResult !== undefined && queryResult.error === undefined : null,
  };
}

/** An edition that did not answer, for a reason known without a status (the scrape's deadline, a name without records). */
export function offlineReading(edition: Edition, reason: ErrorCode, queried: boolean): EditionReading {
  return { edition, online: false, reason, players: null, latencyMs: null, version: null, icmp: null, cached: false, stale: false, query: queried ? false : null };
}

/**
 * The format an `Accept` header asks for: OpenMetrics when it lists
 * `application/openmetrics-text` with a weight at least that of `text/plain`; else text.
 */
export function expositionFormat(accept: string | undefined): ExpositionFormat {
  if (!accept) return 'text';
  let openMetrics = 0;
  let text = 0;
  for (const range of accept.split(',')) {
    const [type = '', ...parameters] = range.split(';').map((part) => part.trim().toLowerCase());
    const qParameter = parameters.find((p) => p.startsWith('q='));
    const q = qParameter === undefined ? 1 : Number(qParameter.slice(2));
    if (!Number.isFinite(q)) continue;
    if (type === 'application/openmetrics-text') openMetrics = Math.max(openMetrics, q);
    else if (type === 'text/plain') text = Math.max(text, q);
  }
  return openMetrics > 0 && openMetrics >= text ? 'openmetrics' : 'text';
}

type Labels = ReadonlyArray<readonly [string, string]>;

interface Family {
  name: string;
  help: string;
  /** OpenMetrics `# UNIT`; the name ends with it. */
  unit?: string;
  samples: Array<{ labels: Labels; value: number }>;
}

/** The series of a probe, in `format`. */
export function probeExposition(outcome: ProbeOutcome, format: ExpositionFormat): string {
  return render(probeFamilies(outcome), format);
}

function probeFamilies({ editions, durationSeconds }: ProbeOutcome): Family[] {
  const per = (pick: (r: EditionReading) => number | null): Family['samples'] =>
    editions.flatMap((r) => {
      const value = pick(r);
      return value === null ? [] : [{ labels: [['edition', r.edition]] as Labels, value }];
    });
  const flag = (on: boolean) => (on ? 1 : 0);
  return [
    { name: 'probe_success', help: 'Whether the server answered the look-up: 1 when it did (with edition=auto, either edition), else 0.', samples: [{ labels: [], value: flag(editions.some((r) => r.online)) }] },
    { name: 'probe_duration_seconds', unit: 'seconds', help: 'How long the probe took, from the request to the answer (a cached answer takes next to nothing).', samples: [{ labels: [], value: durationSeconds }] },
    { name: 'minecraft_players_online', help: 'Players online, as the server reports them.', samples: per((r) => r.players?.online ?? null) },
    { name: 'minecraft_players_max', help: 'Player slots, as the server reports them.', samples: per((r) => r.players?.max ?? null) },
    { name: 'minecraft_latency_seconds', unit: 'seconds', help: 'Round trip of the status ping.', samples: per((r) => (r.latencyMs === null ? null : r.latencyMs / 1000)) },
    {
      name: 'minecraft_version_info',
      help: 'The version the server reports: its name and protocol number.',
      samples: editions.flatMap((r) =>
        r.version ? [{ labels: [['edition', r.edition], ['name', r.version.name], ['protocol', String(r.version.protocol)]] as Labels, value: 1 }] : [],
      ),
    },
    { name: 'minecraft_icmp_reachable', help: 'Whether the server IP answered an ICMP echo (absent where ICMP is not available).', samples: per((r) => (r.icmp === null ? null : flag(r.icmp))) },
    {
      name: 'minecraft_offline_reason',
      help: 'Why the server is offline: 1 for the reason (the status route\'s error_code), 0 for every other; all 0 while it is online.',
      samples: editions.flatMap((r) => OFFLINE_REASONS.map((reason) => ({ labels: [['edition', r.edition], ['reason', reason]] as Labels, value: flag(r.reason === reason) }))),
    },
    { name: 'minecraft_cached', help: 'Whether the answer came from the cache (1) or from a ping made for this probe (0).', samples: per((r) => flag(r.cached)) },
    { name: 'minecraft_stale', help: 'Whether the answer is the last success, served in place of a fresh one (stale-while-revalidate, flap damping, saturation).', samples: per((r) => flag(r.stale)) },
    { name: 'minecraft_query_success', help: 'Whether the Query (GS4, query=true) answered.', samples: per((r) => (r.query === null ? null : flag(r.query))) },
  ];
}

function render(families: Family[], format: ExpositionFormat): string {
  const lines: string[] = [];
  for (const family of families) {
    if (family.samples.length === 0) continue;
    lines.push(`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} gauge`);
    if (format === 'openmetrics' && family.unit) lines.push(`# UNIT ${family.name} ${family.unit}`);
    for (const { labels, value } of family.samples) lines.push(`${family.name}${labelText(labels)} ${numberText(value)}`);
  }
  if (format === 'openmetrics') lines.push('# EOF');
  return `${lines.join('\n')}\n`;
}

function labelText(labels: Labels): string {
  if (labels.length === 0) return '';
  return `{${labels.map(([name, value]) => `${name}="${escapeLabelValue(value)}"`).join(',')}}`;
}

/**
 * A label value as both formats write it: backslash, double quote and line feed escaped; other
 * control characters dropped (a server's version name has no use for them); at most
 * LABEL_VALUE_MAX characters, never cutting a character in two.
 */
export function escapeLabelValue(value: string): string {
  const cleaned = value.replace(/[\u0000-\u0009\u000b-\u001f\u007f]/g, '');
  const kept = Array.from(cleaned).slice(0, LABEL_VALUE_MAX).join('');
  return kept.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function numberText(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}
