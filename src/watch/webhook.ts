/**
 * Webhook requests to public addresses only. The URL's host is resolved through a resolver
 * whose guard is the webhooks' own (WEBHOOK_ALLOWLIST, never TARGET_ALLOWLIST): every address
 * must pass it, the port must be 80, 443 or 1024–65535 unless the allowlist names the address,
 * and the request connects to the checked IP (a `lookup` that answers with it: no second DNS
 * look-up). No redirect is followed; each attempt has one deadline; at most
 * RESPONSE_BYTES_READ of the response body are read, the rest is discarded with the
 * connection. What an attempt tells is coarse on purpose: delivered, refused (an answer that
 * is not 2xx) or failed (no answer, whatever the reason), so the log is no port scanner.
 */
import type { IncomingMessage, RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { BadRequestError, HostNotFoundError, ObserverError, ProbeError, TargetRefusedError } from '../core/errors.js';
import { request as httpRequest } from '../core/node-http.js';
import { parseAddress, type ResolvedTarget } from '../resolve/index.js';
import type { ParsedAddress } from '../resolve/address.js';

/** What a webhook's host is resolved with: a TargetResolver over the webhooks' guard. */
export interface WebhookResolver {
  resolve(address: ParsedAddress, mode: 'bedrock', signal: AbortSignal): Promise<ResolvedTarget>;
}

/** The webhooks' allowlist (WEBHOOK_ALLOWLIST): an address it names may take any port. */
export interface WebhookAllowlist {
  isAllowlisted(ip: string): boolean;
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

/** `delivered`: a 2xx answer; `refused`: another answer; `failed`: none (refused address, DNS, connection, deadline). */
export type AttemptResult = 'delivered' | 'refused' | 'failed';

export interface WebhookResult {
  result: AttemptResult;
  /** HTTP status of the answer; null when none came. */
  statusCode: number | null;
}

/** 400 `invalid_webhook`: the URL is not one a webhook can be sent to. */
export function invalidWebhook(message: string): BadRequestError {
  return new BadRequestError('invalid_webhook', message);
}

const REFUSED_MESSAGE =
  'The webhook URL resolves to a non-public IP address (loopback, private, link-local or reserved); Observer only sends to public addresses.';

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
  // `localhost` and `*.localhost` name loopback (RFC 6761 §6.3), whatever a DNS server says.
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) throw new BadRequestError('webhook_refused', REFUSED_MESSAGE);
  return url;
}

/** The port of a webhook URL, explicit or the scheme's. */
export function webhookPort(url: URL): number {
  return url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

/** Ports a webhook on a public address may use: web ports and unprivileged ones, never a system service's. */
export function isWebhookPort(port: number): boolean {
  return port === 80 || port === 443 || port >= 1024;
}

/**
 * Resolves the URL's host and checks every address with the webhooks' guard, and the port.
 * Refused: 400 `webhook_refused`; a name without records: 400 `webhook_not_found`; DNS
 * failing: 503 `webhook_dns_failure`.
 */
export async function resolveWebhook(url: URL, resolver: WebhookResolver, allowlist: WebhookAllowlist, signal: AbortSignal): Promise<WebhookTarget> {
  const port = webhookPort(url);
  let parsed: ParsedAddress;
  try {
    parsed = parseAddress(`${url.hostname}:${port}`);
  } catch {
    throw invalidWebhook('The webhook URL has a host name Observer cannot use.');
  }
  let ip: string;
  try {
    ip = (await resolver.resolve(parsed, 'bedrock', signal)).ips[0]!;
  } catch (error) {
    if (error instanceof TargetRefusedError) throw new BadRequestError('webhook_refused', REFUSED_MESSAGE);
    if (error instanceof HostNotFoundError) throw new BadRequestError('webhook_not_found', 'The webhook URL\'s host name has no DNS records.');
    if (error instanceof ProbeError) {
      throw new ObserverError('webhook_dns_failure', 503, 'The webhook URL\'s host name could not be resolved just now. Please retry shortly.', {
        cause: error,
        headers: { 'Retry-After': '30' },
      });
    }
    throw error;
  }
  if (!isWebhookPort(port) && !allowlist.isAllowlisted(ip)) {
    throw new BadRequestError('webhook_refused', 'A webhook URL may use port 80, 443 or 1024 to 65535.');
  }
  return { url, ip };
}

/** POSTs `body` to the checked target within `timeoutMs` (or until `signal` aborts); never throws. */
export function postWebhook(
  target: WebhookTarget,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<WebhookResult> {
  const { url, ip } = target;
  const family = isIP(ip);
  // Every connection of this request goes to the checked IP, whatever name it asks for.
  const lookup = ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options.all) callback(null, [{ address: ip, family }]);
    else callback(null, ip, family);
  }) as unknown as LookupFunction;
  const deadline = AbortSignal.timeout(timeoutMs);
  const options: RequestOptions = {
    method: 'POST',
    lookup,
    headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
    signal: signal ? AbortSignal.any([deadline, signal]) : deadline,
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
          finish(answered(statusCode));
        }
      });
      response.on('end', () => finish(answered(statusCode)));
      response.on('error', () => finish(answered(statusCode)));
      response.on('close', () => finish(answered(statusCode)));
    };
    const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, options, onResponse);
    request.on('error', () => finish({ result: 'failed', statusCode: null }));
    request.end(body);
  });
}

function answered(statusCode: number | null): WebhookResult {
  if (statusCode === null) return { result: 'failed', statusCode };
  return { result: statusCode >= 200 && statusCode < 300 ? 'delivered' : 'refused', statusCode };
}

/** Whether trying again may help: no answer, a 5xx, 408 or 429. Any other answer will not change by itself. */
export function retryable(result: WebhookResult): boolean {
  const code = result.statusCode;
  if (result.result === 'failed' || code === null || code >= 500) return true;
  return code === 408 || code === 429;
}
