/**
 * A webhook receiver on loopback (node:http): records every request it gets, and answers each
 * with the next status of `answers` (then 204), `delayMs` after the request arrived (a slow
 * receiver), or never (`hold`: a blackholed one).
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface WebhookReceiver {
  port: number;
  url: (path?: string) => string;
  requests: ReceivedRequest[];
  /** Statuses to answer the next requests with, in order (default 204). */
  answers: number[];
  close: () => Promise<void>;
}

export async function startWebhookReceiver(options: { delayMs?: number; hold?: boolean } = {}): Promise<WebhookReceiver> {
  const requests: ReceivedRequest[] = [];
  const answers: number[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      if (options.hold) return;
      const status = answers.shift() ?? 204;
      setTimeout(() => {
        res.statusCode = status;
        res.end();
      }, options.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path = '/hook') => `http://127.0.0.1:${port}${path}`,
    requests,
    answers,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Polls `check` every 25 ms until it holds or `ms` have passed; the last answer. */
export async function until(check: () => boolean | Promise<boolean>, ms = 20_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return check();
}
