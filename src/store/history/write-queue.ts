/**
 * Group commit for history writes: checks, counter increments and daily look-ups are queued
 * in memory and written together, one transaction per window (`windowMs` or `windowRows`,
 * whichever comes first), never one write per request.
 *
 * - Enqueueing is synchronous and never waits: a request only appends to an array.
 * - The queue is bounded (`maxRows`: checks + look-ups, written or not yet confirmed); past
 *   that, new rows are dropped, counted and logged (at most once per `dropLogMs`).
 * - A failed write (database unreachable, disk full, read-only) keeps its batch, which is
 *   retried whole (the same id, so a retry of a batch whose commit went through counts once:
 *   batch-ledger.ts) before anything queued later, with exponential backoff (`retryMinMs` …
 *   `retryMaxMs`); meanwhile the queue keeps buffering, so the database works as a catch-up
 *   store.
 * - Only a failure that says the database refuses what the batch holds (`refused`: one a
 *   healthy database would repeat for it) counts against the batch. Refused
 *   `ATTEMPTS_BEFORE_SET_ASIDE` times, and the database then taking a write of nothing (so not
 *   an outage), the batch is set aside (`setAside`: the dead-letter table), counted and
 *   reported, and the rows behind it flow. Should setting it aside fail too, the batch stays
 *   held and is tried again: it is never dropped.
 * - After a backlog (an outage), rows are written `catchUpRows` per transaction, oldest first.
 * - A SIGKILL loses what is queued: at most one window (the last `windowMs`, or at most
 *   `windowRows` rows); `drain()` on a graceful stop writes everything.
 */
import { randomUUID } from 'node:crypto';
import type { CheckRecord, CounterIncrements } from '../types.js';

export const COUNTER_NAMES = ['totalRequests', 'apiRequests', 'serverQueries', 'totalChecks'] as const;
export type CounterName = (typeof COUNTER_NAMES)[number];

export interface BufferedLookup {
  server_id: string;
  client_hash: string;
  seen_at: number;
}

/** One transaction's worth of writes, in the order they were queued. */
export interface WriteBatch {
  /** A UUID, the same at every attempt to write this batch. */
  id: string;
  checks: CheckRecord[];
  counters: Map<CounterName, number>;
  lookups: BufferedLookup[];
  /** Delete look-ups older than this (ms since the epoch) in the same transaction; null: not now. */
  expireBefore: number | null;
  /** Ids of this queue's earlier batches known to be committed: the ledger may forget them. */
  settled: string[];
}

/** Writes one batch in one transaction: all of it or nothing. */
export type BatchWriter = (batch: WriteBatch) => Promise<void> | void;

export interface QueueHealth {
  /** ok: writes succeed; degraded: catching up, or rows dropped in the last minute; down: the last write failed. */
  state: 'ok' | 'degraded' | 'down';
  /** Rows (checks + look-ups) waiting to be written. */
  buffered: number;
  /** Rows dropped because the buffer was full, since start. */
  dropped: number;
  /** Batches set aside because the database kept refusing them, since start. */
  deadLettered: number;
  /** Writes that failed (each attempt of a batch), since start. */
  failedWrites: number;
}

export interface WriteQueueOptions {
  /** Longest a queued row waits before its window is written (default 50 ms). */
  windowMs?: number;
  /** A window is written as soon as it holds this many rows (default 500). */
  windowRows?: number;
  /** Rows per transaction while catching up on a backlog (default 5000). */
  catchUpRows?: number;
  /** Bound of the buffer, in rows (HISTORY_BUFFER_MAX; default 100,000). */
  maxRows?: number;
  /** Backoff between failed writes (default 100 ms doubling up to 5 s). */
  retryMinMs?: number;
  retryMaxMs?: number;
  /** Failed writes and dropped rows are reported here (rate-limited). */
  onError?: (error: unknown) => void;
  /** Minimum gap between two "rows dropped" reports (default 10 s). */
  dropLogMs?: number;
  /** Monotonic milliseconds (default performance.now()): backoff and drop reports are durations. */
  now?: () => number;
  /** Keeps a batch the database refuses while it takes other writes; without it, such a batch is retried for ever. */
  setAside?: (batch: WriteBatch, attempts: number, error: unknown) => Promise<void>;
  /**
   * Whether a failure is the database refusing what the batch holds, as it would again for the
   * same batch (a constraint, a value out of range): only those count against a batch.
   * Anything else (a full disk, a lost connection) says the database cannot write now.
   */
  refused?: (error: unknown) => boolean;
}

const MINUTE = 60_000;
/** Refused attempts of one batch before the queue asks whether the database takes other writes. */
export const ATTEMPTS_BEFORE_SET_ASIDE = 5;
/** Committed batch ids remembered for the ledger at most (more are left to its age limit). */
const SETTLED_MAX = 64;

/** A batch the database kept refusing, set aside so that the rows behind it are written. */
export class BatchSetAsideError extends Error {
  constructor(
    readonly batchId: string,
    readonly rows: number,
    readonly attempts: number,
    cause: unknown,
  ) {
    super(
      `history batch ${batchId} (${rows} checks and look-ups) set aside in dead_batches after ${attempts} refused attempts: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
    this.name = 'BatchSetAsideError';
  }
}

export class HistoryBufferFullError extends Error {
  constructor(readonly dropped: number) {
    super(`history write buffer full: ${dropped} rows dropped so far (raise HISTORY_BUFFER_MAX?)`);
    this.name = 'HistoryBufferFullError';
  }
}

export class WriteQueue {
  private checks: CheckRecord[] = [];
  private counters = new Map<CounterName, number>();
  private lookups = new Map<string, BufferedLookup>();
  private expireBefore: number | null = null;
  /** The batch taken and not yet committed: being written, or waiting for its retry (counted against the bound). */
  private held: WriteBatch | null = null;
  /** Attempts of `held` the database refused for what it holds (`refused`). */
  private refusals = 0;
  /** Ids of committed batches the ledger may forget, sent with the next batch. */
  private settled: string[] = [];
  private setAsideTotal = 0;
  private failedTotal = 0;
  private writing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private failures = 0;
  private retryAt = 0;
  private droppedTotal = 0;
  private lastDropAt = Number.NEGATIVE_INFINITY;
  private lastDropLog = Number.NEGATIVE_INFINITY;
  private lastError: unknown = null;
  private stopped = false;
  private changes = 0;
  private readonly windowMs: number;
  private readonly windowRows: number;
  private readonly catchUpRows: number;
  private readonly maxRows: number;
  private readonly retryMinMs: number;
  private readonly retryMaxMs: number;
  private readonly dropLogMs: number;
  private readonly now: () => number;
  private readonly onError: (error: unknown) => void;
  private readonly setAside: WriteQueueOptions['setAside'];
  private readonly refused: (error: unknown) => boolean;

  constructor(
    private readonly writer: BatchWriter,
    options: WriteQueueOptions = {},
  ) {
    this.windowMs = options.windowMs ?? 50;
    this.windowRows = options.windowRows ?? 500;
    this.catchUpRows = Math.max(this.windowRows, options.catchUpRows ?? 5000);
    this.maxRows = options.maxRows ?? 100_000;
    this.retryMinMs = options.retryMinMs ?? 100;
    this.retryMaxMs = options.retryMaxMs ?? 5000;
    this.dropLogMs = options.dropLogMs ?? 10_000;
    this.now = options.now ?? (() => performance.now());
    this.onError = options.onError ?? (() => {});
    this.setAside = options.setAside;
    this.refused = options.refused ?? (() => false);
  }

  /**
   * Grows with every row or expiry that can change what the database answers (a new check, a
   * new (server, client) look-up, an expiry); readers compare it to know whether an answer
   * computed earlier still holds everything recorded since.
   */
  get version(): number {
    return this.changes;
  }

  /** Whether rows or an expiry wait to be written. */
  get holdsRows(): boolean {
    return this.checks.length > 0 || this.lookups.size > 0 || this.expireBefore !== null || this.held !== null;
  }

  /** Rows queued or being written. */
  get buffered(): number {
    return this.checks.length + this.lookups.size + (this.held ? this.held.checks.length + this.held.lookups.length : 0);
  }

  health(): QueueHealth {
    let state: QueueHealth['state'] = 'ok';
    if (this.failures > 0) state = 'down';
    else if (this.buffered > this.catchUpRows || this.now() - this.lastDropAt < MINUTE) state = 'degraded';
    return { state, buffered: this.buffered, dropped: this.droppedTotal, deadLettered: this.setAsideTotal, failedWrites: this.failedTotal };
  }

  enqueueCheck(check: CheckRecord): void {
    if (this.stopped || !this.room()) return;
    this.checks.push(check);
    this.changes += 1;
    this.scheduled();
  }

  enqueueCounts(increments: CounterIncrements): void {
    if (this.stopped) return;
    // Each field read by name: a loop over the names would read them by a computed key, which
    // every request pays for (each caller's increments have a shape of their own).
    let any = this.addCount('totalRequests', increments.totalRequests);
    any = this.addCount('apiRequests', increments.apiRequests) || any;
    any = this.addCount('serverQueries', increments.serverQueries) || any;
    any = this.addCount('totalChecks', increments.totalChecks) || any;
    if (any) this.scheduled();
  }

  private addCount(name: CounterName, n: number | undefined): boolean {
    if (n === undefined || !Number.isFinite(n) || n <= 0) return false;
    this.counters.set(name, (this.counters.get(name) ?? 0) + Math.floor(n));
    return true;
  }

  /** A look-up already queued for the same (server, client) only moves its time forward. */
  enqueueLookup(lookup: BufferedLookup): void {
    if (this.stopped) return;
    const key = `${lookup.server_id}\0${lookup.client_hash}`;
    const queued = this.lookups.get(key);
    if (queued) {
      if (lookup.seen_at > queued.seen_at) queued.seen_at = lookup.seen_at;
      return;
    }
    if (!this.room()) return;
    this.lookups.set(key, lookup);
    this.changes += 1;
    this.scheduled();
  }

  /** Asks the next transaction to delete look-ups older than `before`. */
  expire(before: number): void {
    if (this.stopped) return;
    this.expireBefore = Math.max(this.expireBefore ?? before, before);
    this.changes += 1;
    this.scheduled();
  }

  /**
   * Writes everything queued now, retrying failures (with the backoff) until `deadlineMs`
   * has passed; rejects with the last error if the queue could not be emptied by then.
   */
  async drain(deadlineMs = 5000): Promise<void> {
    const until = this.now() + deadlineMs;
    const late = () => new Error(`the history writes did not finish within ${deadlineMs} ms`);
    for (;;) {
      // A write that hangs (a database that stopped answering) is waited for until the deadline.
      if (this.writing && !(await settlesWithin(this.writing, until - this.now()))) throw late();
      if (!this.pending()) return;
      const wait = this.retryAt - this.now();
      if (wait > 0) {
        if (this.now() + wait >= until) throw this.lastError;
        await new Promise((resolve) => setTimeout(resolve, wait));
        continue;
      }
      let failure: unknown = null;
      const write = this.writeOnce().catch((error: unknown) => {
        failure = error;
      });
      if (!(await settlesWithin(write, until - this.now()))) throw late();
      if (failure !== null && this.now() >= until) throw failure;
    }
  }

  /** Whether a check of `serverId` is queued or being written (not yet in the database). */
  holdsCheck(serverId: string): boolean {
    const of = (check: CheckRecord) => check.serverId === serverId;
    return (this.held?.checks.some(of) ?? false) || this.checks.some(of);
  }

  /** One write of what is queued now, unless writes are backing off; never rejects. */
  async flushOnce(): Promise<void> {
    if (this.writing) await this.writing;
    if (this.retryAt > this.now()) return;
    await this.writeOnce().catch(() => {});
  }

  /** Writes what is queued (within `deadlineMs`), then refuses new rows. */
  async stop(deadlineMs = 5000): Promise<void> {
    try {
      await this.drain(deadlineMs);
    } finally {
      this.stopped = true;
      this.clearTimer();
      this.held = null;
      this.checks = [];
      this.lookups.clear();
      this.counters.clear();
      this.expireBefore = null;
    }
  }

  private room(): boolean {
    if (this.buffered < this.maxRows) return true;
    this.droppedTotal += 1;
    const now = this.now();
    this.lastDropAt = now;
    if (now - this.lastDropLog >= this.dropLogMs) {
      this.lastDropLog = now;
      this.onError(new HistoryBufferFullError(this.droppedTotal));
    }
    return false;
  }

  private pending(): boolean {
    return this.held !== null || this.checks.length > 0 || this.lookups.size > 0 || this.counters.size > 0 || this.expireBefore !== null;
  }

  /** Makes sure a write will happen: at once for a full window, else at the end of this one. */
  private scheduled(): void {
    if (this.writing) return; // the running write schedules the next one when it ends
    const full = this.checks.length + this.lookups.size >= this.windowRows;
    // A write already timed covers these rows unless the window filled up.
    if (this.timer && !full) return;
    const delay = Math.max(full ? 0 : this.windowMs, this.retryAt - this.now());
    if (delay <= 0) {
      // A full window is written in a microtask, before the next event: its rows never wait
      // behind a timer while more arrive (a SIGKILL loses at most one window).
      this.clearTimer();
      this.writeOnce().catch(() => {});
      return;
    }
    if (this.timer) {
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      this.writeOnce().catch(() => {});
    }, delay);
    // Never keeps the process alive by itself: close() drains.
    this.timer.unref();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Writes the batch held for a retry, else the oldest rows (up to a catch-up transaction's worth). */
  private writeOnce(): Promise<void> {
    if (this.writing) return this.writing;
    if (!this.pending()) return Promise.resolve();
    const batch = (this.held ??= this.take());
    batch.settled = this.settled;
    const run = (async () => {
      try {
        await null; // the write starts on the next tick, after `this.writing` is set
        await this.writer(batch);
        this.settled = [batch.id];
        this.cleared();
      } catch (error) {
        await this.failed(batch, error);
      } finally {
        this.writing = null;
        if (!this.stopped && this.pending()) this.scheduled();
      }
    })();
    this.writing = run.catch(() => {});
    return run;
  }

  /** The held batch is written or set aside: the next write takes new rows at once. */
  private cleared(): void {
    this.held = null;
    this.refusals = 0;
    this.failures = 0;
    this.lastError = null;
    this.retryAt = 0;
  }

  /** Sets the batch aside if the database refuses it alone, else backs off and rethrows. */
  private async failed(batch: WriteBatch, error: unknown): Promise<void> {
    const cause = errorText(error);
    const newCause = this.failures === 0 || cause !== errorText(this.lastError);
    this.failures += 1;
    this.failedTotal += 1;
    this.lastError = error;
    if (this.refused(error)) this.refusals += 1;
    const { setAside } = this;
    if (setAside && this.refusals >= ATTEMPTS_BEFORE_SET_ASIDE && (await this.takesWrites()) && (await this.setHeldAside(setAside, batch, error))) return;
    const backoff = Math.min(this.retryMaxMs, this.retryMinMs * 2 ** Math.min(20, this.failures - 1));
    this.retryAt = this.now() + backoff * (0.75 + Math.random() * 0.5);
    // The first failure of a streak, each change of its cause, then every tenth: an outage is
    // not a log flood, and the log still says why writes fail now.
    if (newCause || this.failures % 10 === 0) this.onError(error);
    throw error;
  }

  /** Sets the held batch aside; false when that fails too (the batch stays held, to be tried again). */
  private async setHeldAside(setAside: NonNullable<WriteQueueOptions['setAside']>, batch: WriteBatch, error: unknown): Promise<boolean> {
    const attempts = this.refusals;
    try {
      await setAside(batch, attempts, error);
    } catch {
      return false;
    }
    this.setAsideTotal += 1;
    this.cleared();
    this.onError(new BatchSetAsideError(batch.id, batch.checks.length + batch.lookups.length, attempts, error));
    return true;
  }

  /** Whether the database commits a batch of nothing now: if so, a batch it refuses is the batch's fault. */
  private async takesWrites(): Promise<boolean> {
    const probe: WriteBatch = { id: randomUUID(), checks: [], lookups: [], counters: new Map(), expireBefore: null, settled: [] };
    try {
      await this.writer(probe);
    } catch {
      return false;
    }
    this.settled = [...this.settled, probe.id].slice(-SETTLED_MAX);
    return true;
  }

  /** Takes the oldest rows, up to a catch-up transaction's worth, with the counters and expiry queued. */
  private take(): WriteBatch {
    const checks = this.checks.length <= this.catchUpRows ? this.checks : this.checks.slice(0, this.catchUpRows);
    this.checks = checks === this.checks ? [] : this.checks.slice(checks.length);
    let lookups: BufferedLookup[];
    const room = this.catchUpRows - checks.length;
    if (this.lookups.size <= room) {
      lookups = [...this.lookups.values()];
      this.lookups = new Map();
    } else {
      lookups = [];
      for (const [key, lookup] of this.lookups) {
        if (lookups.length >= room) break;
        lookups.push(lookup);
        this.lookups.delete(key);
      }
    }
    const batch: WriteBatch = { id: randomUUID(), checks, lookups, counters: this.counters, expireBefore: this.expireBefore, settled: [] };
    this.counters = new Map();
    this.expireBefore = null;
    return batch;
  }
}

/** Whether `promise` settles within `ms` (it is not cancelled when it does not). */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, ms));
  });
  try {
    return await Promise.race([promise.then(() => true, () => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
