/**
 * A steady mixed load on a cluster's front (nginx) for the compose test and the cluster bench:
 * a few workers, each sending one request after another with a pause between, in a fixed cycle
 * of status look-ups (each cycle's first one of a server no one has asked before, so that it
 * pings; the others of servers already asked, answered from the shared cache), history,
 * trends, statistics, health and an image. Every answer is tallied by status; a request that
 * gets no answer (refused, reset, timed out) is a failure. Each status answer's server and
 * `checked_at` are kept: together they name the check the answer carries, which the history
 * must hold.
 *
 * Bounded: it stops when asked, or after `maxRequests` or `maxMs`, whichever comes first.
 */
export interface LoadTally {
  sent: number;
  /** Answers by HTTP status. */
  byStatus: Record<number, number>;
  /** Answers other than 2xx by status and error code (`503 migrating`). */
  errors: Record<string, number>;
  /** Requests that got no HTTP answer. */
  failed: number;
  /** Answers other than 2xx and 503 with Retry-After, and failures, each described. */
  unexpected: string[];
  /** Each looked-up address with the distinct `checked_at` of its answers. */
  checks: Map<string, Set<string>>;
  /** Answer times in ms, in the order answered, with the time each was sent (ms since the start). */
  latencies: Array<{ at: number; ms: number }>;
}

export interface LoadOptions {
  /** Distinguishes the servers of one load from another's (part of their names). */
  label: string;
  /** The address of a worker's n-th new server. */
  serverName: (label: string, worker: number, n: number) => string;
  workers?: number;
  pauseMs?: number;
  maxRequests?: number;
  maxMs?: number;
}

/** The `q` quantile (0..1) of the answer times, in ms. */
export function latencyQuantile(tally: LoadTally, q: number, from = 0, to = Infinity): number {
  const ms = tally.latencies.filter((l) => l.at >= from && l.at < to).map((l) => l.ms).sort((a, b) => a - b);
  return ms.length === 0 ? NaN : ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]!;
}

export interface RunningLoad {
  tally: LoadTally;
  stop(): Promise<LoadTally>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The request a worker sends at step `k`: `fresh` is the address of a server no one has asked
 * before, `asked` those of the servers it has had a status answer for.
 */
function nextPath(k: number, fresh: string, asked: string[]): string {
  const latest = asked.at(-1) ?? fresh;
  // A server answered a few cycles ago: its check is written, whichever instance reads it (the
  // instance that pinged writes it within its commit window).
  const earlier = asked.at(-3);
  switch (k % 10) {
    case 0:
      return `/api/v1/status/${fresh}`;
    case 1:
    case 7:
      return `/api/v1/status/${latest}`;
    case 4:
      return `/api/v1/status/${asked[Math.floor(Math.random() * asked.length)] ?? latest}`;
    case 2:
    case 9:
      return earlier === undefined ? '/api/v1/trends' : `/api/v1/history/${earlier}`;
    case 3:
      return '/api/v1/status';
    case 5:
      return '/api/v1/trends';
    case 6:
      return '/api/v1/stats';
    default:
      return `/api/v1/banner/motd?motd=${encodeURIComponent(`&aload &b${k}`)}`;
  }
}

/** Tallies an answer; the address it answered a status for, if it did. */
function record(tally: LoadTally, path: string, res: Response, body: string, started: number, t0: number): string | undefined {
  tally.byStatus[res.status] = (tally.byStatus[res.status] ?? 0) + 1;
  tally.latencies.push({ at: started - t0, ms: performance.now() - started });
  if (res.status < 200 || res.status > 299) {
    const code = `${res.status} ${(/"error":"(\w+)"/.exec(body) ?? [])[1] ?? '?'}`;
    tally.errors[code] = (tally.errors[code] ?? 0) + 1;
  }
  const retryable = res.status === 503 && res.headers.get('retry-after') !== null;
  if ((res.status < 200 || res.status > 299) && !retryable) {
    tally.unexpected.push(`GET ${path}: ${res.status} ${body.slice(0, 200)}`);
  }
  const address = /^\/api\/v1\/status\/([^?]+)$/.exec(path)?.[1];
  if (address === undefined || res.status !== 200) return undefined;
  const checkedAt = (JSON.parse(body) as { checked_at?: string }).checked_at;
  if (checkedAt === undefined) return undefined;
  const set = tally.checks.get(address) ?? new Set<string>();
  set.add(checkedAt);
  tally.checks.set(address, set);
  return address;
}

export function startSteadyLoad(base: string, options: LoadOptions): RunningLoad {
  const { workers = 4, pauseMs = 40, maxRequests = 50_000, maxMs = 10 * 60_000 } = options;
  const tally: LoadTally = { sent: 0, byStatus: {}, errors: {}, failed: 0, unexpected: [], checks: new Map(), latencies: [] };
  const t0 = performance.now();
  let stopped = false;
  const worker = async (w: number) => {
    const asked: string[] = [];
    let fresh = options.serverName(options.label, w, 0);
    for (let k = 0; !stopped && tally.sent < maxRequests && performance.now() - t0 < maxMs; k += 1) {
      const path = nextPath(k, fresh, asked);
      tally.sent += 1;
      const started = performance.now();
      try {
        const res = await fetch(base + path, { signal: AbortSignal.timeout(30_000) });
        if (record(tally, path, res, await res.text(), started, t0) === fresh) {
          asked.push(fresh);
          fresh = options.serverName(options.label, w, asked.length);
        }
      } catch (error) {
        tally.failed += 1;
        tally.unexpected.push(`GET ${path}: no answer (${String((error as Error).cause ?? error)})`);
      }
      await sleep(pauseMs);
    }
  };
  const running = Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
  return {
    tally,
    async stop() {
      stopped = true;
      await running;
      return tally;
    },
  };
}
