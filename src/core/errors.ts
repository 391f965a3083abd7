/**
 * Errors that reach a client carry a stable `code`, an HTTP status and a public message.
 * Internal detail goes into `cause` (and the log), never into the response body.
 */
export class ObserverError extends Error {
  readonly code: string;
  readonly statusCode: number;
  /** Extra response headers, e.g. Retry-After. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    code: string,
    statusCode: number,
    publicMessage: string,
    options: { cause?: unknown; headers?: Record<string, string> } = {},
  ) {
    super(publicMessage, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.statusCode = statusCode;
    this.headers = options.headers ?? {};
  }
}

/** 400: the client sent something we cannot accept. */
export class BadRequestError extends ObserverError {
  constructor(code: string, message: string, options: { cause?: unknown } = {}) {
    super(code, 400, message, options);
  }
}

/** 400: the address the client typed is not a valid server address. */
export class InvalidAddressError extends BadRequestError {
  constructor(message: string) {
    super('invalid_address', message);
  }
}

/** 400: the target resolves to an address the public-address guard refuses. */
export class TargetRefusedError extends BadRequestError {
  constructor(message = 'The address resolves to a non-public IP address and cannot be queried.') {
    super('target_refused', message);
  }
}

/** 404: the host name has no A, AAAA or SRV record. */
export class HostNotFoundError extends ObserverError {
  constructor(host: string) {
    super('host_not_found', 404, `The host name "${host}" has no DNS records.`);
  }
}

/**
 * 429: the IP the look-up would ping has had its pings of the minute (TARGET_PINGS_PER_MINUTE),
 * whoever asked and by whatever name. The message never names the IP: a name's addresses are
 * not the client's business past `ip_address`.
 */
export class TargetRateLimitedError extends ObserverError {
  constructor(limit: number, headers: Record<string, string>, retryAfterSeconds: number) {
    super(
      'target_rate_limited',
      429,
      `Observer pings one server IP at most ${limit === 1 ? 'once' : `${limit} times`} a minute, whatever the name or ` +
        `client, and this server's IP has had its pings for this minute. Retry in ${retryAfterSeconds} seconds.`,
      { headers },
    );
  }
}

/**
 * 503: the service sheds load: a new render or ping refused by the admission control
 * (src/http/admission.ts). Counted and logged once per episode there, never per request.
 */
export class OverloadedError extends ObserverError {
  constructor(what: string) {
    super('overloaded', 503, `The service is overloaded (${what}). Please retry in a few seconds.`, {
      headers: { 'Retry-After': '2' },
    });
  }
}

/**
 * Why a Minecraft query failed: the `error_code` of an offline status (docs/api.md, "Why a
 * server is offline"). `message` is the short, safe summary the API shows in `error`; it never
 * contains an address, a stack or a raw exception text.
 */
export type ProbeFailure =
  | 'timeout'
  | 'connection_refused'
  | 'connection_closed'
  | 'unreachable'
  | 'invalid_response'
  | 'response_too_large'
  | 'dns_failure'
  | 'dns_not_found'
  | 'srv_invalid';

/** An offline status's `error_code`: a probe failure, or an unexpected error in a client. */
export type ErrorCode = ProbeFailure | 'internal_error';

/** `queryResult.error_code`: the Query's own failure, or `query_unavailable` without a Query client. */
export type QueryErrorCode = ErrorCode | 'query_unavailable';

const probeMessages: Record<ProbeFailure, string> = {
  timeout: 'timed out',
  connection_refused: 'connection refused',
  connection_closed: 'connection closed',
  unreachable: 'host unreachable',
  invalid_response: 'invalid response',
  response_too_large: 'response too large',
  dns_failure: 'DNS lookup failed',
  dns_not_found: 'SRV target not found',
  srv_invalid: 'no usable SRV record',
};

/** Every `error_code` with its `error` sentence, in the order the API documents them. */
export const ERROR_MESSAGES: Readonly<Record<ErrorCode, string>> = { ...probeMessages, internal_error: 'query failed' };

/** The code of an `error` sentence; `internal_error` for one that is not in the list. */
export function errorCodeOf(message: string | null): ErrorCode {
  const found = Object.entries(ERROR_MESSAGES).find(([, text]) => text === message);
  return found ? (found[0] as ErrorCode) : 'internal_error';
}

/** Every `queryResult.error_code` with its `error` sentence. */
export const QUERY_ERROR_MESSAGES: Readonly<Record<QueryErrorCode, string>> = { ...ERROR_MESSAGES, query_unavailable: 'query not available' };

/** Why a test vote was not taken: the `error_code` of a vote answer (docs/votes.md). */
export type VoteFailure = 'connection_refused' | 'timeout' | 'not_votifier' | 'bad_token' | 'bad_key' | 'wrong_version' | 'server_error';

/** Every vote `error_code` with what it means, in the order docs/votes.md lists them. */
export const VOTE_FAILURES: Readonly<Record<VoteFailure, string>> = {
  connection_refused: 'no connection to the port within the deadline: closed, filtered or unreachable alike',
  not_votifier: 'connected, but no Votifier greeting',
  wrong_version: 'the secret does not fit the protocol the server greeted with: a token for Votifier v1, or a public key for NuVotifier v2',
  bad_key: 'the public key is not a 2048-bit RSA key, or the server kept the connection open after the vote (Votifier does when it cannot decrypt it)',
  bad_token: "the server refused the vote's signature",
  server_error: "the server refused the vote for another reason (its cause in `server_status`), or closed without answering",
  timeout: 'the server greeted but did not answer the vote before the deadline',
};

export class ProbeError extends Error {
  readonly code: ProbeFailure;
  constructor(code: ProbeFailure, options: { cause?: unknown } = {}) {
    super(probeMessages[code], options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ProbeError';
    this.code = code;
  }
}
