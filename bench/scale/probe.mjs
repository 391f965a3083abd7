/**
 * The event-loop probe of bench/scale.ts, in a process of its own: asks the service's health
 * route every 5 ms, one request at a time, and keeps the latencies per phase. Health does no
 * work of its own, so a slow answer is the time the service's event loop was busy with
 * something else: the longest one in a phase bounds the longest stall in it.
 *
 * IPC: `{ phase: name }` starts a phase; `{ report: true }` answers
 * `{ phases: { name: { n, p50, p99, max } } }`; `{ stop: true }` ends the process.
 * Loopback only.
 */
import http from 'node:http';

const url = new URL(process.argv[2]);
if (url.hostname !== '127.0.0.1') throw new Error(`not a loopback URL: ${url}`);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const phases = new Map();
let current = 'start';
let running = true;

function ask() {
  return new Promise((resolve) => {
    const started = performance.now();
    const request = http.get(url, { agent }, (response) => {
      response.resume();
      response.on('end', () => resolve(performance.now() - started));
    });
    request.on('error', () => resolve(null));
    request.setTimeout(120_000, () => request.destroy());
  });
}

function summary(latencies) {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;
  return { n: sorted.length, p50: at(0.5), p99: at(0.99), max: sorted.at(-1) ?? 0 };
}

process.on('message', (message) => {
  if (message.phase) current = message.phase;
  if (message.report) process.send({ phases: Object.fromEntries([...phases].map(([name, list]) => [name, summary(list)])) });
  if (message.stop) {
    running = false;
    agent.destroy();
    process.disconnect();
  }
});

while (running) {
  const latency = await ask();
  if (latency !== null) {
    if (!phases.has(current)) phases.set(current, []);
    phases.get(current).push(latency);
  }
  await new Promise((resolve) => setTimeout(resolve, 5));
}
