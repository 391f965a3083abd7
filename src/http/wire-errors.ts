/**
 * The answers Node's HTTP server would write by itself, in the one error shape with the CORS
 * headers (docs/errors.md), so that a client reads them like any other refusal:
 *  - a request head Node cannot parse (a malformed request line or header): 400 `bad_request`;
 *  - a request head or URL over Node's header size limit (16 KiB unless Node is told
 *    otherwise): 431 `headers_too_large`;
 *  - a request not received within HTTP_HEADERS_TIMEOUT_MS / HTTP_REQUEST_TIMEOUT_MS: 408
 *    `request_timeout`;
 *  - an HTTP/1.1 request without `Host` (Node's own answer is an empty 400): 400 `bad_request`;
 *  - a request arriving while the instance stops (Fastify's own answer is its own JSON): 503
 *    `shutting_down` with `Retry-After`.
 * An `Expect` other than `100-continue` is ignored rather than refused with an empty 417, as
 * RFC 9110 section 10.1.1 allows.
 *
 * A refusal written before parsing closes its connection (closeAfterAnswer): Node's HTTP server
 * allows half-open connections, and would otherwise go on reading from a client that never
 * reads its answer and trickles bytes for ever, a descriptor held per connection.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { FastStatus } from './fast-status.js';
import { CORS_HEADERS } from './cors.js';
import { errorBody } from './errors.js';

/** Seconds a client should wait before asking a stopping instance again (another one may answer). */
const SHUTDOWN_RETRY_SECONDS = '5';

/**
 * How long a refused connection stays open at most once its answer is written, reading and
 * dropping what the client still sends (Apache's lingering close waits as long).
 */
const LINGER_MS = 2_000;

/** What Node's `clientError` codes answer: status, code and sentence. */
function refusalOf(code: string | undefined): [number, string, string] {
  if (code === 'HPE_HEADER_OVERFLOW') return [431, 'headers_too_large', 'The request line and headers are larger than this service accepts.'];
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return [408, 'request_timeout', 'The request was not received in time.'];
  return [400, 'bad_request', 'The request is not valid HTTP.'];
}

const REASONS: Readonly<Record<number, string>> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

/**
 * The bytes of a whole answer, written straight to the socket (the request was never parsed):
 * to a HEAD, its headers only (RFC 9110 section 9.3.2), as Node writes any other answer to one.
 */
function rawAnswer(status: number, code: string, message: string, head: boolean): string {
  const body = JSON.stringify(errorBody(code, message));
  const cors = Object.entries(CORS_HEADERS).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return (
    `HTTP/1.1 ${status} ${REASONS[status]}\r\n` +
    `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
    `${cors}connection: close\r\n\r\n${head ? '' : body}`
  );
}

/** A request line's start: the method, a space, then the target. */
const REQUEST_LINE = /^([A-Z]{1,20}) \S/;

/**
 * The method of the refused request, when the bytes Node was parsing begin with its request
 * line (Node's error carries them as `rawPacket`: the chunk read last). A request head that
 * came in several reads, or a timeout, leaves it unknown.
 */
function refusedMethod(rawPacket: unknown): string | undefined {
  return Buffer.isBuffer(rawPacket) ? REQUEST_LINE.exec(rawPacket.toString('latin1', 0, 32))?.[1] : undefined;
}

/**
 * Ends `socket` after `answer`, then destroys it once the client has closed its side and the
 * answer has left, or LINGER_MS after the answer at the latest. What the client still sends
 * meanwhile is read and dropped, so that the close does not reset the connection under an
 * answer the client has not read yet; a client that never reads, or trickles bytes for ever,
 * holds the connection LINGER_MS, not for as long as it likes.
 */
function closeAfterAnswer(socket: Socket, answer: string): void {
  let written = false;
  // A client that closed its side before the refusal (a head cut short) has nothing more to send.
  let ended = socket.readableEnded;
  const timer = setTimeout(() => socket.destroy(), LINGER_MS).unref();
  const closeWhenDone = () => {
    if (written && ended) socket.destroy();
  };
  socket.once('close', () => clearTimeout(timer));
  socket.once('finish', () => {
    written = true;
    closeWhenDone();
  });
  socket.once('end', () => {
    ended = true;
    closeWhenDone();
  });
  socket.end(answer);
}

/**
 * Fastify's `clientErrorHandler`: the refusal in the one shape, then the connection closed
 * (closeAfterAnswer). A HEAD gets the headers alone when its request line can be read (see
 * refusedMethod); otherwise the body is sent, as to a GET. Node reports a refused connection's
 * later bytes as errors too: its answer is on its way already.
 */
export function answerClientError(error: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed || socket.writableEnded) return;
  if (!socket.writable) return void socket.destroy();
  const [status, code, message] = refusalOf(error.code);
  closeAfterAnswer(socket, rawAnswer(status, code, message, refusedMethod(error.rawPacket) === 'HEAD'));
}

/** Writes an answer of the one shape to a request Fastify will not see. */
function refuse(res: ServerResponse, status: number, code: string, message: string, extra: Record<string, string> = {}): void {
  const body = JSON.stringify(errorBody(code, message));
  res.writeHead(status, {
    ...CORS_HEADERS,
    ...extra,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  res.end(body);
}

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => unknown;

/** What stands before Fastify's handler: the front (fast-status.ts), and whether the instance is stopping. */
export interface Front {
  fast: FastStatus | null;
  stopping: boolean;
}

/** Marks `front` stopping as soon as `app` begins to close. */
export function markStopping(app: FastifyInstance, front: Front): void {
  app.addHook('preClose', (done) => {
    front.stopping = true;
    done();
  });
}

/**
 * `handler` behind the answers Node and Fastify would otherwise write in their own shapes: a
 * request without `Host`, and any request once the instance is stopping.
 */
export function guardRequests(handler: RequestHandler, front: Pick<Front, 'stopping'>): RequestHandler {
  return (req, res) => {
    if (front.stopping) return refuse(res, 503, 'shutting_down', 'Observer is restarting. Please retry shortly.', { 'retry-after': SHUTDOWN_RETRY_SECONDS });
    if (req.headers.host === undefined && req.httpVersion === '1.1') return refuse(res, 400, 'bad_request', 'An HTTP/1.1 request must carry a Host header.');
    handler(req, res);
  };
}

/** Server options for the answers above: Node's own check for `Host` is left to guardRequests. */
export const WIRE_SERVER_OPTIONS = { requireHostHeader: false } as const;

/** A request with an unknown expectation, answered as if it had not been asked. */
export function ignoreUnknownExpectations(server: Server, handler: RequestHandler): void {
  server.on('checkExpectation', handler);
}
