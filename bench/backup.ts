/**
 * What a SQLite backup costs a running service: `VACUUM INTO` with the sqlite3 command-line
 * tool (docs/operations.md, "Backups") taken again and again while the service (dist/main.js)
 * answers uncached status look-ups of loopback addresses (each writes a check, a look-up and
 * counters), against the same load without a copy, in the same run; the same with the copy
 * under `nice -n 19`, and with the tool's `.backup` (SQLite's online backup API). Phases
 * alternate, three rounds of each, so the machine's other work weighs on all alike.
 *
 * The cost to the writer is read from the service itself: its histogram of the writer thread's
 * work (observer_sqlite_writer_duration_seconds on /metrics), scraped before and after each
 * phase: how many group commits and how many checkpoints it ran, their mean time, and how many
 * took over 20 and over 50 ms. Beside it, per phase, the answers' p50, p99 and longest time, the longest the
 * service's write queue grew (rows waiting for the writer), and the longest write transaction
 * of a second connection (a no-op UPDATE every 20 ms: how long a writer waits for the lock and
 * its commit while the copy reads).
 *
 * BENCH_BACKUP_SERVERS (default 10,000) servers × 48 checks are written first, so the copy
 * has a database of some size to read.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { randomUUID } from 'node:crypto';
import { freePort } from '../scripts/ports.mjs';
import { openStore } from '../src/store/index.js';
import { sqliteBinding } from '../src/store/sqlite/binding.js';
import { fmt, serviceEnv, startCommand, summarise, waitForHealth } from './support.js';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '..');
const SERVERS = Number(process.env.BENCH_BACKUP_SERVERS ?? 10_000);
const CHECKS_PER_SERVER = 48;
const PHASE_MS = 8_000;
const CONCURRENCY = 8;

const dir = mkdtempSync(join(tmpdir(), 'observer-bench-backup-'));
const path = join(dir, 'observer.db');

async function prefill(): Promise<void> {
  const store = await openStore({ database: { kind: 'sqlite', path }, checkRetentionDays: 7 }, undefined, { pruneDelayMs: 3_600_000 });
  const now = Date.now();
  for (let s = 0; s < SERVERS; s++) {
    const serverId = randomUUID();
    for (let c = 0; c < CHECKS_PER_SERVER; c++) {
      store.recordCheck({ serverId, edition: 'java', host: `s${s}.example.com`, port: 25565, checkedAt: now - c * 1_800_000, online: c % 5 !== 0, playersOnline: s % 50, playersMax: 100, latencyMs: 20 });
    }
    if (s % 50 === 49) await store.flush();
  }
  await store.close();
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

interface Phase {
  answers: number[];
  queueMax: number;
  writerMax: number;
  copies: number[];
  /** The service's writer work during the phase, from its histogram. */
  work: WriterCounts;
}

/** The service's writer work of one kind: how many, their total seconds, how many took over 20 and over 50 ms. */
interface WorkCounts {
  all: number;
  seconds: number;
  over20: number;
  over50: number;
}
type WriterCounts = Record<'batch' | 'checkpoint', WorkCounts>;

const METRICS_TOKEN = 'bench-backup-metrics-token';

/** The writer histogram's cumulative counts for group commits and checkpoints. */
async function writerCounts(base: string): Promise<WriterCounts> {
  const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  const read = (work: string, suffix: string, le?: string) => {
    for (const match of text.matchAll(/^observer_sqlite_writer_duration_seconds_(\w+)\{([^}]*)\} ([\d.e+-]+)$/gm)) {
      const labels = match[2]!;
      if (match[1] === suffix && labels.includes(`work="${work}"`) && (le === undefined || labels.includes(`le="${le}"`))) return Number(match[3]);
    }
    return 0;
  };
  const of = (work: string): WorkCounts => {
    const all = read(work, 'count');
    return { all, seconds: read(work, 'sum'), over20: all - read(work, 'bucket', '0.02'), over50: all - read(work, 'bucket', '0.05') };
  };
  return { batch: of('batch'), checkpoint: of('checkpoint') };
}

function minus(after: WriterCounts, before: WriterCounts): WriterCounts {
  const one = (a: WorkCounts, b: WorkCounts): WorkCounts => ({ all: a.all - b.all, seconds: a.seconds - b.seconds, over20: a.over20 - b.over20, over50: a.over50 - b.over50 });
  return { batch: one(after.batch, before.batch), checkpoint: one(after.checkpoint, before.checkpoint) };
}

/** One phase of load; `copying` runs alongside it until the phase ends. */
/** Loopback addresses not looked up yet (127.0.0.2 on): each look-up is uncached, refused at once, and recorded. */
let looked = 1;
function nextAddress(): string {
  looked += 1;
  return `127.${(looked >> 16) & 255}.${(looked >> 8) & 255}.${looked & 255}:25565`;
}

async function phase(base: string, copying: ((until: number) => Promise<number[]>) | null): Promise<Phase> {
  const before = await writerCounts(base);
  const until = performance.now() + PHASE_MS;
  const answers: number[] = [];
  const lookups = Array.from({ length: CONCURRENCY }, async () => {
    while (performance.now() < until) {
      const started = performance.now();
      const res = await fetch(`${base}/api/v1/status/${nextAddress()}`);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`status ${res.status}`);
      answers.push(performance.now() - started);
    }
  });
  let queueMax = 0;
  const queue = (async () => {
    while (performance.now() < until) {
      const body = (await (await fetch(`${base}/api/v1/status`)).json()) as { write_buffer?: number };
      queueMax = Math.max(queueMax, body.write_buffer ?? 0);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  let writerMax = 0;
  const writer = (async () => {
    const db = sqliteBinding().open(path);
    db.exec('PRAGMA busy_timeout = 5000');
    const touch = db.prepare("UPDATE counters SET value = value WHERE name = 'totalRequests'");
    try {
      while (performance.now() < until) {
        const started = performance.now();
        touch.run();
        writerMax = Math.max(writerMax, performance.now() - started);
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      db.close();
    }
  })();
  const all = Promise.all([...lookups, queue, writer]);
  all.catch(() => {}); // awaited below, after the copies
  const copies = copying ? await copying(until) : [];
  await all;
  const after = await writerCounts(base);
  const work = minus(after, before);
  return { answers, queueMax, writerMax, copies, work };
}

/** Copies with the sqlite3 tool, one after the other until `until`: `VACUUM INTO` or `.backup` (the online backup API, page by page). */
const copying = (command: (target: string) => string, nice = false) => async (until: number): Promise<number[]> => {
  const times: number[] = [];
  for (let i = 0; performance.now() < until; i++) {
    const target = join(dir, `copy-${i}.db`);
    const started = performance.now();
    await (nice ? run('nice', ['-n', '19', 'sqlite3', path, command(target)]) : run('sqlite3', [path, command(target)]));
    times.push(performance.now() - started);
    rmSync(target, { force: true });
  }
  return times;
};
const vacuumInto = copying((target) => `VACUUM INTO '${target}'`);
const niceVacuumInto = copying((target) => `VACUUM INTO '${target}'`, true);
const backupApi = copying((target) => `.backup '${target}'`);

function line(label: string, p: Phase): string {
  const copies = p.copies.length > 0 ? `; ${p.copies.length} copies of ${fmt(percentile(p.copies, 50))} ms each (median)` : '';
  const kind = (name: string, w: WorkCounts) =>
    `${fmt(w.all)} ${name}, mean ${fmt((1000 * w.seconds) / Math.max(1, w.all), 1)} ms, ${fmt(w.over20)} over 20 ms, ${fmt(w.over50)} over 50 ms`;
  const work = `the service's writer: ${kind('group commits', p.work.batch)}; ${kind('checkpoints', p.work.checkpoint)}`;
  return `${label}: ${p.answers.length} answers, p50 ${fmt(percentile(p.answers, 50), 1)} ms, p99 ${fmt(percentile(p.answers, 99), 1)} ms, longest ${fmt(Math.max(...p.answers), 1)} ms; ${work}; write queue at most ${p.queueMax} rows; a second writer's longest transaction ${fmt(p.writerMax, 1)} ms${copies}`;
}

try {
  const started = performance.now();
  await prefill();
  console.log(`database: ${SERVERS} servers × ${CHECKS_PER_SERVER} checks, ${fmt(statSync(path).size / 2 ** 20, 1)} MiB, written in ${fmt((performance.now() - started) / 1000, 1)} s`);
  const port = await freePort();
  const [command, args] = startCommand(root);
  const child = spawn(command, args, {
    env: serviceEnv(port, dir, { RATE_LIMIT_STATUS: '10000000', RATE_LIMIT_GENERAL: '10000000', NEW_SERVERS_PER_CLIENT_PER_DAY: '1000000', TARGET_PINGS_PER_MINUTE: '100000', ICMP: 'off', LOG_LEVEL: 'warn', METRICS_TOKEN }),
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitForHealth(base, child);
    console.log(`uncached look-ups of loopback addresses, ${CONCURRENCY} at a time, phases of ${PHASE_MS / 1000} s:`);
    const results: Array<[string, Phase]> = [];
    // Interleaved, so that the machine's other work weighs on both alike.
    for (let round = 0; round < 3; round++) {
      results.push([`  no copy        `, await phase(base, null)]);
      results.push([`  VACUUM INTO    `, await phase(base, vacuumInto)]);
      results.push([`  nice VACUUM INTO`, await phase(base, niceVacuumInto)]);
      results.push([`  .backup        `, await phase(base, backupApi)]);
    }
    for (const [label, p] of results) console.log(line(label, p));
    for (const method of ['no copy', 'VACUUM INTO', 'nice VACUUM INTO', '.backup']) {
      const during = results.filter(([label]) => label.trim() === method).map(([, p]) => p);
      const slow = during.map((p) => `${fmt((100 * (p.work.batch.over50 + p.work.checkpoint.over50)) / Math.max(1, p.work.batch.all + p.work.checkpoint.all), 1)} %`).join(' / ');
      summarise(
        `backup (SQLite, uncached load, ${method}): answers' p99 ${during.map((p) => fmt(percentile(p.answers, 99), 1)).join(' / ')} ms, longest ${during.map((p) => fmt(Math.max(...p.answers), 1)).join(' / ')} ms; the service's commits and checkpoints over 50 ms: ${slow}; a second writer's longest transaction ${during.map((p) => fmt(p.writerMax, 1)).join(' / ')} ms (per round)`,
      );
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
