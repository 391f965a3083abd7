/**
 * Load generator for bench/service.ts, run in its own process so that it shares no event loop
 * with the services it measures. Takes one JSON argument and prints one JSON line:
 *
 *   node bench/load-worker.mjs '{"url":"http://127.0.0.1:8080/api/v1/status","connections":32,"seconds":5}'
 *   → {"rps":…,"p50":…,"p99":…,"non2xx":…,"errors":…,"timeouts":…,"total":…,"loadCpuMs":…}
 *
 * loadCpuMs is the CPU time this load generator itself used.
 *
 * With `"distinct": "<prefix>"`, `{n}` in the URL's path is replaced by `<prefix>-<n>` with
 * n counting up per request, so that every request asks for a new name (uncached status);
 * with `"cycle": N` as well, n goes round 0 … N-1 (a server list's N servers in turn).
 * Loopback URLs only.
 */
import autocannon from 'autocannon';

const options = JSON.parse(process.argv[2] ?? '{}');
const url = new URL(options.url);
if (!['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname)) throw new Error(`not a loopback URL: ${options.url}`);

// The path as written: URL() would percent-encode the braces of `{n}`.
const rawPath = options.url.slice(options.url.indexOf('/', url.protocol.length + 2));
let n = 0;
const requests =
  options.distinct === undefined
    ? undefined
    : [
        {
          setupRequest: (request) => {
            request.path = rawPath.replace('{n}', `${options.distinct}-${options.cycle ? n++ % options.cycle : n++}`);
            return request;
          },
        },
      ];

const result = await autocannon({
  url: url.href,
  ...(requests ? { requests } : {}),
  connections: options.connections ?? 32,
  duration: options.seconds ?? 5,
  timeout: 10,
});

process.stdout.write(
  JSON.stringify({
    rps: result.requests.total / (result.duration || options.seconds || 1),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    total: result.requests.total,
    statusCodes: result.statusCodeStats,
    loadCpuMs: (({ user, system }) => (user + system) / 1000)(process.cpuUsage()),
  }) + '\n',
);
