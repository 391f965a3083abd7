/**
 * The public API, as the pages use it. URLs are relative to the service root, found from
 * this script's own URL (…/assets/app-HASH.js), so the front works under any proxy prefix.
 */
export const root = new URL('../', import.meta.url);

export type Mode = 'java' | 'bedrock' | 'legacy';
export const MODES: ReadonlyArray<{ mode: Mode; label: string }> = [
  { mode: 'java', label: 'Java Edition' },
  { mode: 'bedrock', label: 'Bedrock Edition' },
  { mode: 'legacy', label: 'Legacy Java (before 1.7)' },
];

export interface Motd {
  raw: string;
  clean: string;
  html: string;
}

export interface ServerStatus {
  query: { host: string; port: number; legacy: boolean; bedrock: boolean };
  server_id: string | null;
  ip_address: string | null;
  online: boolean;
  error: string | null;
  version: { name: string; protocol: number } | null;
  players: { online: number; max: number; sample: Array<{ name?: unknown }> } | null;
  motd: Motd | null;
  favicon: string | null;
  roundTripLatency: number | null;
  stale: boolean;
  checked_at: string;
  /** Java only: on Mojang's blocked-servers list; null (or absent) when the service has no list. */
  blocked?: boolean | null;
  /** Only while flap damping serves the last success: since when the server has not answered, and why. */
  failing?: { since: string; failures: number; error: string | null; error_code: string | null };
}

export interface HistoryBucket {
  time: string;
  checks: number;
  online: number;
  players_avg: number | null;
  players_max: number | null;
}

export interface ServerHistory {
  range: string;
  bucket_seconds: number;
  checks: number;
  online_checks: number;
  uptime_percentage: number | null;
  buckets: HistoryBucket[];
  stale?: true;
}

export interface TrendServer {
  server_id: string;
  address: string;
  edition: 'java' | 'bedrock';
  players_online: number;
  players_max: number;
  uptime_percentage: number;
}

export interface Statistics {
  totalChecks: number;
  serverQueries: number;
  onlineServers: number;
  offlineServers: number;
  activePlayers: number;
  onlineRate: number;
}

/** An error answer of the API: its public message is meant for people. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The query flags of a mode, for API and page URLs. */
export function modeParams(mode: Mode): URLSearchParams {
  const params = new URLSearchParams();
  if (mode !== 'java') params.set(mode, 'true');
  return params;
}

/** An absolute URL under the service root: `url('api/v1/stats')`. */
export function url(path: string, params?: URLSearchParams): string {
  const u = new URL(path, root);
  if (params) u.search = params.toString();
  return u.href;
}

export const addressPath = (address: string) => encodeURIComponent(address);

/**
 * GET of an API path. `revalidate`: never answered from the browser's cache without asking
 * (the front page's trends are cached 30 s for API clients, but someone who has just looked a
 * server up expects to find it there).
 */
export async function getJson<T>(path: string, params?: URLSearchParams, signal?: AbortSignal, revalidate = false): Promise<T> {
  const response = await fetch(url(path, params), {
    headers: { accept: 'application/json' },
    ...(signal ? { signal } : {}),
    ...(revalidate ? { cache: 'no-cache' as const } : {}),
  });
  const body = (await response.json().catch(() => null)) as { error?: unknown; message?: unknown } | null;
  if (!response.ok) {
    const message = typeof body?.message === 'string' ? body.message : `The service answered ${response.status}.`;
    throw new ApiError(response.status, typeof body?.error === 'string' ? body.error : 'error', message);
  }
  return body as T;
}

/** A JSON request to the API (a bearer token when given); its error answer as an ApiError. */
export async function call<T>(method: string, path: string, token: string | null, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const response = await fetch(url(path), { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const answer = (await response.json().catch(() => null)) as { error?: unknown; message?: unknown } | null;
  if (!response.ok) {
    const message = typeof answer?.message === 'string' ? answer.message : `The service answered ${response.status}.`;
    throw new ApiError(response.status, typeof answer?.error === 'string' ? answer.error : 'error', message);
  }
  return answer as T;
}

/** What to tell the user when a request failed: the API's sentence, or that the service could not be reached. */
export function failureMessage(error: unknown): string {
  return error instanceof ApiError ? error.message : 'The service could not be reached. Check your connection and try again.';
}
