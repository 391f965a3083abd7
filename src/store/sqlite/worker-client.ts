/**
 * The main thread's end of the SQLite worker (worker.ts): requests with ids, answers matched
 * back. The worker keeps the process alive only while a request waits for it.
 *
 * Every request has a deadline. A worker that has not answered by then is stopped: the
 * requests in flight fail, saying so, and none of them commits (commit-gate.ts: the one that
 * had already begun to commit is answered instead); the thread closes its connection once its
 * current statement returns, which rolls back what it had open. A thread is never terminated
 * from outside: a native binding interrupted inside a call can take the process down with it.
 * Should a thread stop (stopped, or an uncaught error), the next request starts a new one on
 * the same file, after a pause that doubles with each stop in a row. A request is one whole
 * operation (protocol.ts), so none has anything left to run on the next thread.
 */
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../../core/module-worker.js';
import type { SqliteBinding } from './binding.js';
import { newCommitGate, requestTag, STOPPED_CODE, stopGate, type CommitGate } from './commit-gate.js';
import { checkSqliteFile } from './connection.js';
import type { SqliteProgress, SqliteRequest, SqliteResponse, SqliteWorkerData, WorkerError } from './protocol.js';

/** An error SQLite (or the worker) reported, with SQLite's code where it gave one. */
export class SqliteWorkerError extends Error {
  readonly code: string | undefined;
  constructor(error: WorkerError) {
    super(error.message);
    this.name = error.name === 'Error' ? 'SqliteWorkerError' : error.name;
    this.code = error.code;
  }
}

/** The worker stopped, or was stopped, before it answered: the transaction it was running was not committed. */
export class SqliteWorkerStoppedError extends SqliteWorkerError {
  constructor(message: string) {
    super({ name: 'SqliteWorkerStoppedError', message, code: STOPPED_CODE });
  }
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
  /** The thread it was sent to. */
  worker: Worker;
  onEvent: ((event: unknown) => void) | undefined;
}

export interface RequestOptions {
  /** Longest wait for the answer (default: the worker's `deadlineMs`). */
  deadlineMs?: number;
  /** What the request reports before its answer (a migration's statements). */
  onEvent?: (event: unknown) => void;
}

/** Longest a request waits for its answer unless told otherwise. */
export const REQUEST_DEADLINE_MS = 30_000;
/** Pause before a new thread after a stop, doubling with each stop in a row up to the maximum. */
const RESTART_MIN_MS = 100;
const RESTART_MAX_MS = 5_000;

/** The worker's heap holds one batch or one answer at a time. */
const RESOURCE_LIMITS = { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 256 };

export class SqliteWorker {
  private worker: Worker | null = null;
  private gate: CommitGate | null = null;
  private ready: Promise<void> | null = null;
  /** The thread has started and opened its connection: a request now waits for no start. */
  private answering = false;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;
  /** Threads started so far: the current one's generation. */
  private started = 0;
  /** Stops in a row (no answer since), and when the next thread may start. */
  private stops = 0;
  private restartAt = 0;
  /** Default deadline of a request (ms). */
  deadlineMs = REQUEST_DEADLINE_MS;

  private constructor(
    private readonly data: Omit<SqliteWorkerData, 'gate' | 'handled'>,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Checks the file, then starts the writer on it; rejects if the connection cannot be opened. */
  static async start(path: string, binding: SqliteBinding, onError: (error: unknown) => void): Promise<SqliteWorker> {
    checkSqliteFile(path);
    const client = new SqliteWorker({ module: binding.modulePath, path, role: 'writer' }, onError);
    await client.spawn();
    return client;
  }

  /**
   * A reader of the file the writer set up, not started: see `warm` and `up`. An instance
   * nobody reads history from holds no second connection and isolate.
   */
  static reader(writer: SqliteWorker): SqliteWorker {
    return new SqliteWorker({ ...writer.data, role: 'reader' }, writer.onError);
  }

  /** Whether the thread is up: a request sent now waits for no thread to start. */
  get up(): boolean {
    return this.answering;
  }

  /**
   * Starts the thread in the background unless it runs or is starting. A start that fails
   * shows as `up` staying false (and in the next request sent to it).
   */
  warm(): void {
    if (this.worker === null && !this.closed) this.spawn().catch(() => {});
  }

  /** The generation of the thread that runs now; null while none does. */
  get running(): number | null {
    return this.worker === null ? null : this.started;
  }

  /** The generation of the running thread, started (after its pause, if one stopped) if none runs. */
  async generation(): Promise<number> {
    if (this.closed) throw new SqliteWorkerError({ name: 'Error', message: 'the SQLite store is closed' });
    if (!this.worker) {
      const pause = this.restartAt - Date.now();
      if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
      if (!this.worker) await this.spawn();
      else await this.ready;
    } else await this.ready;
    return this.started;
  }

  async request(request: SqliteRequest, options: RequestOptions = {}): Promise<unknown> {
    let worker: Worker | null = null;
    while (worker === null) {
      const generation = await this.generation();
      // Null when the thread stopped while this request waited for it to start.
      if (this.started === generation) worker = this.worker;
    }
    const id = this.nextId++;
    const deadlineMs = options.deadlineMs ?? this.deadlineMs;
    const answer = new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => {
        if (this.worker !== worker) return; // stopped already; its thread answers or exits
        this.stop(new SqliteWorkerStoppedError(`the SQLite worker did not answer a ${request.op} within ${deadlineMs} ms: it was stopped, and nothing of it was committed`));
      }, deadlineMs);
      timer.unref();
      this.pending.set(id, { resolve, reject, timer, worker, onEvent: options.onEvent });
    });
    worker.ref();
    worker.postMessage({ id, request });
    return answer;
  }

  /**
   * Stops the thread, as a crash would but without interrupting a call into SQLite: the
   * requests in flight fail with `error` and commit nothing (but the one that had begun to
   * commit, which is answered), the thread closes its connection once its current statement
   * returns, rolling back what it had open, and the next request starts a new thread.
   */
  stop(error: Error): void {
    const worker = this.worker;
    if (!worker) return;
    const committing = stopGate(this.gate!);
    this.lost();
    for (const [id, waiting] of this.pending) {
      if (waiting.worker !== worker || requestTag(id) === committing) continue;
      this.pending.delete(id);
      clearTimeout(waiting.timer);
      waiting.reject(error);
    }
    this.unrefIfIdle(worker);
    // Wakes the thread if it waits for a request: it finds itself stopped and closes.
    worker.postMessage({ id: 0, request: { op: 'close' } });
  }

  /** Closes the connection and waits for the thread to end: only then is the file let go (its log checkpointed and removed). */
  async close(): Promise<void> {
    if (this.closed) return;
    const worker = this.worker;
    if (worker) {
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      await this.request({ op: 'close' }).catch(() => worker.terminate());
      this.closed = true;
      worker.ref();
      await exited;
    }
    this.closed = true;
  }

  /** The thread is gone: the next one starts after a pause that grows with each stop in a row. */
  private lost(): void {
    this.worker = null;
    this.gate = null;
    this.answering = false;
    if (this.closed) return;
    this.stops += 1;
    this.restartAt = Date.now() + Math.min(RESTART_MAX_MS, RESTART_MIN_MS * 2 ** Math.min(16, this.stops - 1));
  }

  private spawn(): Promise<void> {
    const gate = newCommitGate();
    const handled = new Int32Array(new SharedArrayBuffer(4));
    const workerData: SqliteWorkerData = { ...this.data, gate, handled };
    const worker = startModuleWorker('store/sqlite/worker', { workerData, resourceLimits: RESOURCE_LIMITS });
    this.worker = worker;
    this.gate = gate;
    this.started += 1;
    worker.unref();
    this.ready = new Promise<void>((resolve, reject) => {
      let started = false;
      worker.on('message', (response: SqliteResponse | SqliteProgress) => {
        if ('event' in response) return this.progress(response, handled);
        if (response.id !== 0) return this.settle(response);
        if (response.ok) {
          started = true;
          this.answering = true;
          resolve();
        } else reject(new SqliteWorkerError(response.error));
      });
      worker.once('error', (error) => {
        reject(error);
        if (started && !this.closed) this.onError(error);
      });
      worker.once('exit', (code) => {
        reject(new Error(`the SQLite worker exited (${code}) before it was ready`));
        if (this.worker === worker) this.lost();
        this.failPending(worker, new SqliteWorkerStoppedError(`the SQLite worker stopped (exit code ${code}): nothing it had not committed was kept`));
      });
    });
    return this.ready;
  }

  /** Hands a request's progress to its caller, then lets the worker go on. */
  private progress(message: SqliteProgress, handled: Int32Array): void {
    try {
      this.pending.get(message.id)?.onEvent?.(message.event);
    } catch (error) {
      this.onError(error);
    } finally {
      Atomics.store(handled, 0, 1);
      Atomics.notify(handled, 0);
    }
  }

  private settle(response: SqliteResponse): void {
    const waiting = this.pending.get(response.id);
    if (!waiting) return;
    this.pending.delete(response.id);
    clearTimeout(waiting.timer);
    this.unrefIfIdle(waiting.worker);
    this.stops = 0;
    if (response.ok) waiting.resolve(response.value);
    // A commit the stop refused (a request that had committed before, in an earlier transaction).
    else if (response.error.code === STOPPED_CODE) waiting.reject(new SqliteWorkerStoppedError(response.error.message));
    else waiting.reject(new SqliteWorkerError(response.error));
  }

  /** A thread waited on by no request does not keep the process alive. */
  private unrefIfIdle(worker: Worker): void {
    for (const waiting of this.pending.values()) if (waiting.worker === worker) return;
    worker.unref();
  }

  private failPending(worker: Worker, error: Error): void {
    for (const [id, waiting] of this.pending) {
      if (waiting.worker !== worker) continue;
      this.pending.delete(id);
      clearTimeout(waiting.timer);
      waiting.reject(error);
    }
  }
}
