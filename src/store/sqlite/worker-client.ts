/**
 * The main thread's end of the SQLite worker (worker.ts): requests with ids, answers matched
 * back. The worker keeps the process alive only while a request waits for it. Should it stop
 * (an uncaught error), the requests in flight fail, as a lost connection's would, and the
 * next request starts a new one on the same file.
 */
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../../core/module-worker.js';
import type { SqliteBinding } from './binding.js';
import { checkSqliteFile } from './connection.js';
import type { SqliteRequest, SqliteResponse, SqliteWorkerData, WorkerError } from './protocol.js';

/** An error SQLite (or the worker) reported, with SQLite's code where it gave one. */
export class SqliteWorkerError extends Error {
  readonly code: string | undefined;
  constructor(error: WorkerError) {
    super(error.message);
    this.name = error.name === 'Error' ? 'SqliteWorkerError' : error.name;
    this.code = error.code;
  }
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/** The worker's heap holds one batch or one answer at a time. */
const RESOURCE_LIMITS = { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 256 };

export class SqliteWorker {
  private worker: Worker | null = null;
  private ready: Promise<void> | null = null;
  /** The thread has started and opened its connection: a request now waits for no start. */
  private answering = false;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  private constructor(
    private readonly data: SqliteWorkerData,
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

  async request(request: SqliteRequest): Promise<unknown> {
    if (this.closed) throw new SqliteWorkerError({ name: 'Error', message: 'the SQLite store is closed' });
    if (!this.worker) await this.spawn();
    else await this.ready;
    const id = this.nextId++;
    const answer = new Promise<unknown>((resolve, reject) => this.pending.set(id, { resolve, reject }));
    if (this.pending.size === 1) this.worker!.ref();
    this.worker!.postMessage({ id, request });
    return answer;
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

  private spawn(): Promise<void> {
    const worker = startModuleWorker('store/sqlite/worker', { workerData: this.data, resourceLimits: RESOURCE_LIMITS });
    this.worker = worker;
    worker.unref();
    this.ready = new Promise<void>((resolve, reject) => {
      let started = false;
      worker.on('message', (response: SqliteResponse) => {
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
        if (this.worker === worker) {
          this.worker = null;
          this.answering = false;
        }
        reject(new Error(`the SQLite worker exited (${code}) before it was ready`));
        this.failPending(new SqliteWorkerError({ name: 'Error', message: `the SQLite worker stopped (exit code ${code})` }));
      });
    });
    return this.ready;
  }

  private settle(response: SqliteResponse): void {
    const waiting = this.pending.get(response.id);
    if (!waiting) return;
    this.pending.delete(response.id);
    if (this.pending.size === 0) this.worker?.unref();
    if (response.ok) waiting.resolve(response.value);
    else waiting.reject(new SqliteWorkerError(response.error));
  }

  private failPending(error: Error): void {
    const waiting = [...this.pending.values()];
    this.pending.clear();
    for (const { reject } of waiting) reject(error);
  }
}
