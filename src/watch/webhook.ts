/**
 * Webhook requests to public addresses only: the URL's host is resolved through the same
 * resolver and public-address guard as a ping, every address must pass, and the request
 * connects to the checked IP (a `lookup` that answers with it: no second DNS look-up). No
 * redirect is followed; each attempt has one deadline; at most RESPONSE_BYTES_READ of the
 * response body are read, the rest is discarded with the connection.
 */
import type { IncomingMessage, RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { BadRequestError, HostNotFoundError, ObserverError, ProbeError, TargetRefusedError } from '../core/errors.js';
import { request as httpRequest } from '../core/node-http.js';
import { parseAddress, type ResolvedTarget } from '../resolve/index.js';
import type { ParsedAddress } from '../resolve/address.js';

/** What a webhook's host is resolved with (TargetResolver). */
export interface WebhookResolver {
  resolve(address: ParsedAddress, mode: 'bedrock', signal: AbortSignal): Promise<ResolvedTarget>;
}

/** Response bytes read of a webhook's answer; the rest is not read. */
export const RESPONSE_BYTES_READ = 4096;
/** The longest webhook URL accepted. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

export interface WebhookTarget {
  url: URL;
  /** The guard-checked IP to connect to. */
  ip: string;
}

export interface WebhookResult {
  /** HTTP status of the answer; null when none came. */
  statusCode: number | null;
  /** A short, safe reason when the attempt failed; null on a 2xx answer. */
  error: string | null;
}

/** 400 `invalid_webhook`: the URL is not one a webhook can be sent to. */
export function invalidWebhook(message: string): BadRequestError {
  return new BadRequestError('invalid_webhook', message);
}

/** A URL a webhook may be sent to (http or https, no credentials, no fragment), or a 400. */
export function parseWebhookUrl(text: string): URL {
  if (text.length > MAX_WEBHOOK_URL_LENGTH) throw invalidWebhook(`The webhook URL is longer than ${MAX_WEBHOOK_URL_LENGTH} characters.`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalidWebhook('The webhook URL is not a valid URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidWebhook('The webhook URL must start with https:// or http://.');
  if (url.username !== '' || url.password !== '') throw invalidWebhook('The webhook URL must not contain credentials.');
  if (url.hash !== '') throw invalidWebhook('The webhook URL must not contain a fragment.');
  return url;
}

/**
 * Resolves the URL's host and checks every address with the guard. Refused: 400
 * `webhook_refused`; a name without records: 400 `webhook_not_found`; DNS failing: 503
 * `webhook_dns_failure`.
 */
export async function resolveWebhook(url: URL, resolver: WebhookResolver, signal: AbortSignal): Promise<WebhookTarget> {
  const port = url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80';
  let parsed: ParsedAddress;
  try {
    parsed = parseAddress(`${url.hostname}:${port}`);
  } catch {
    throw invalidWebhook('The webhook URL has a host name Observer cannot use.');
  }
  try {
    const resolved = await resolver.resolve(parsed, 'bedrock', signal);
    return { url, ip: resolved.ips[0]! };
  } catch (error) {
    if (error instanceof TargetRefusedError) {
      throw new BadRequestError(
        'webhook_refused',
        'The webhook URL resolves to a non-public IP address (loopback, private, link-local or reserved); Observer only sends to public addresses.',
      );
    }
    if (error instanceof HostNotFoundError) throw new BadRequestError('webhook_not_found', 'The webhook URL\'s host name has no DNS records.');
    if (error instanceof ProbeError) {
      throw new ObserverError('webhook_dns_failure', 503, 'The webhook URL\'s host name could not be resolved just now. Please retry shortly.', {
        cause: error,
        headers: { 'Retry-After': '30' },
      });
    }
    throw error;
  }
}

/** POSTs `body` to the checked target within `timeoutMs`; never throws. */
export function postWebhook(
  target: WebhookTarget,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<WebhookResult> {
  const { url, ip } = target;
  const family = isIP(ip);
  // Every connection of this request goes to the checked IP, whatever name it asks for.
  const lookup = ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options.all) callback(null, [{ address: ip, family }]);
    else callback(null, ip, family);
  }) as unknown as LookupFunction;
  const options: RequestOptions = {
    method: 'POST',
    lookup,
    headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
    signal: AbortSignal.timeout(timeoutMs),
    agent: false,
  };
  // The first outcome settles the promise; later ones (close after end) change nothing.
  return new Promise((finish: (result: WebhookResult) => void) => {
    const onResponse = (response: IncomingMessage) => {
      const statusCode = response.statusCode ?? null;
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read >= RESPONSE_BYTES_READ) {
          response.destroy();
          finish(outcome(statusCode));
        }
      });
      response.on('end', () => finish(outcome(statusCode)));
      response.on('error', () => finish(outcome(statusCode)));
      response.on('close', () => finish(outcome(statusCode)));
    };
    const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, options, onResponse);
    request.on('error', (error: NodeJS.ErrnoException) => finish({ statusCode: null, error: failureReason(error) }));
    request.end(body);
  });
}

function outcome(statusCode: number | null): WebhookResult {
  if (statusCode !== null && statusCode >= 200 && statusCode < 300) return { statusCode, error: null };
  if (statusCode !== null && statusCode >= 300 && statusCode < 400) return { statusCode, error: 'redirect not followed' };
  return { statusCode, error: `HTTP ${statusCode ?? 'error'}` };
}

/** A short reason for the delivery log: never an address or a raw exception text. */
export function failureReason(error: unknown): string {
  if (error instanceof ProbeError) return error.message;
  if (error instanceof ObserverError) return error.code;
  const code = (error as NodeJS.ErrnoException | null)?.code;
  const name = (error as Error | null)?.name;
  if (name === 'TimeoutError' || name === 'AbortError' || code === 'ABORT_ERR') return 'timed out';
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'connection reset';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'host unreachable';
  if (typeof code === 'string' && (code.startsWith('ERR_TLS') || code.includes('CERT'))) return 'TLS error';
  return 'request failed';
}
