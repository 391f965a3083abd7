/**
 * SharedRedis: Redis as an accelerator, never a single point of failure.
 *
 * Every command runs under a short timeout (REDIS_COMMAND_TIMEOUT_MS, 250 ms by default), and
 * the connection has no offline queue, so a dead or paused Redis fails a command at once or
 * within the timeout. A circuit breaker keeps any one request from waiting on Redis much
 * longer than that:
 *  - The first command that times out suspends sending: every later command is refused at
 *    once (callers use their local implementation: memory cache, local rate limits, local
 *    coalescing) and a probe (PING) goes out at once. Its answer, or a late reply to any
 *    command, resumes sending; a healthy Redis that answered late because it (or this
 *    process) was busy costs one round trip of local answers, and no change of state.
 *  - The breaker opens (state `down`, reported) when that probe also fails, when the
 *    connection closes, or after a few other failed commands in a row with no success for
 *    half a second. While it is open nothing is sent, and a probe runs every
 *    `probeIntervalMs`; the first answer closes it, even from a Redis restarted empty.
 */
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';

// ioredis is loaded by the first SharedRedis, so an instance without REDIS_URL never holds it.
const require = createRequire(import.meta.url);

export type RedisState = 'ok' | 'down';

export interface SharedRedisOptions {
  /** Longest wait on one command, milliseconds. */
  commandTimeoutMs?: number;
  /** Consecutive failed commands (other than timeouts, which suspend sending at once) that open the breaker. */
  failureThreshold?: number;
  /** How often an open breaker probes Redis, milliseconds. */
  probeIntervalMs?: number;
  /** Those failures open the breaker only when no command has succeeded for this long, milliseconds. */
  openAfterMs?: number;
  /** Hears about state changes (for the log). */
  onStateChange?: (state: RedisState, reason: string) => void;
}

export const DEFAULT_REDIS_COMMAND_TIMEOUT_MS = 250;

/** What the breaker did, since start: for tests and the operator's eye. */
export interface SharedRedisCounters {
  /** Commands sent that waited the whole command timeout. */
  timedOut: number;
  /** Commands given to run or tryRun while not available (suspended or open): not sent. */
  refused: number;
  /** Commands sent that failed otherwise (an error reply, a lost connection). */
  failed: number;
}

/** Thrown instead of sending a command while the breaker is open. */
export class RedisUnavailableError extends Error {
  /**
   * @param sent whether the command went out (it timed out, and Redis may still apply it) or
   *   was refused without being sent
   */
  constructor(
    message = 'Redis is unavailable',
    readonly sent = false,
  ) {
    super(message);
    this.name = 'RedisUnavailableError';
  }
}

export class SharedRedis {
  readonly client: Redis;
  readonly commandTimeoutMs: number;
  private readonly failureThreshold: number;
  private readonly probeIntervalMs: number;
  private readonly openAfterMs: number;
  private lastSuccessAt = 0;
  private readonly onStateChange: (state: RedisState, reason: string) => void;
  /** Open until the first connection is ready. */
  private open = true;
  /** A command timed out: nothing is sent until a probe or a late reply shows Redis answers. */
  private suspended = false;
  private failures = 0;
  private readonly counts: SharedRedisCounters = { timedOut: 0, refused: 0, failed: 0 };
  private probe: NodeJS.Timeout | null = null;
  private probing: Promise<boolean> | null = null;
  private closed = false;

  constructor(url: string, options: SharedRedisOptions = {}) {
    this.commandTimeoutMs = options.commandTimeoutMs ?? DEFAULT_REDIS_COMMAND_TIMEOUT_MS;
    this.failureThreshold = options.failureThreshold ?? 3;
    this.probeIntervalMs = options.probeIntervalMs ?? 500;
    this.openAfterMs = options.openAfterMs ?? 500;
    this.onStateChange = options.onStateChange ?? (() => {});
    const { Redis: Client } = require('ioredis') as typeof import('ioredis');
    this.client = new Client(url, {
      // Our own timer (in run()) decides when a command has timed out; ioredis's, later, only
      // drops a command whose reply never comes. A reply between the two still shows that
      // Redis answers, and resumes sending.
      commandTimeout: this.commandTimeoutMs * 2,
      connectTimeout: Math.max(1_000, this.commandTimeoutMs * 4),
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      // Reconnect quickly and forever; the breaker decides when commands flow again.
      retryStrategy: (times) => Math.min(50 * times, 500),
      lazyConnect: false,
    });
    // ioredis emits 'error' on every failed connection attempt; the breaker handles it.
    this.client.on('error', () => {});
    this.client.on('close', () => this.trip('connection closed'));
    this.client.on('ready', () => this.recover('connected'));
  }

  /** Resolves once connected, or after `timeoutMs` (the instance then starts on its fallbacks). */
  async ready(timeoutMs = 1_000): Promise<boolean> {
    if (this.available) return true;
    return new Promise<boolean>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.client.off('ready', done);
        resolve(this.available);
      };
      const timer = setTimeout(done, timeoutMs);
      this.client.once('ready', done);
    });
  }

  /** True while commands are sent to Redis (breaker closed, sending not suspended). */
  get available(): boolean {
    return !this.open && !this.suspended && !this.closed;
  }

  /** `ok` while shared (or probing after one timeout), `down` while the breaker is open. */
  get state(): RedisState {
    return !this.open && !this.closed ? 'ok' : 'down';
  }

  /** For health: `degraded` once a command has failed since the last success, or while probing. */
  health(): 'ok' | 'degraded' | 'down' {
    if (this.state === 'down') return 'down';
    return this.failures > 0 || this.suspended ? 'degraded' : 'ok';
  }

  /** Commands timed out, refused and failed since start. */
  get counters(): Readonly<SharedRedisCounters> {
    return { ...this.counts };
  }

  /**
   * Runs `command` against Redis within the command timeout. Rejects at once with
   * RedisUnavailableError while the breaker is open or sending is suspended; a timeout
   * suspends sending, another failure counts towards opening the breaker.
   */
  async run<T>(command: (redis: Redis) => Promise<T>): Promise<T> {
    if (!this.available) {
      this.counts.refused += 1;
      throw new RedisUnavailableError();
    }
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    const timeout = new Promise<never>((_, reject) => {
      // After a long busy tick the timers phase runs before the poll phase: a reply already in
      // the socket would lose to its own timeout. setImmediate lets pending I/O land first.
      timer = setTimeout(
        () =>
          setImmediate(() => {
            timedOut = true;
            reject(new RedisUnavailableError('Redis command timed out', true));
          }),
        this.commandTimeoutMs,
      );
    });
    const sent = command(this.client);
    // A reply that comes after its timeout still shows that Redis answers.
    sent.then(
      () => {
        if (timedOut) this.recover('a late reply arrived');
      },
      () => {},
    );
    try {
      const result = await Promise.race([sent, timeout]);
      this.failures = 0;
      this.lastSuccessAt = Date.now();
      return result;
    } catch (error) {
      if (timedOut) {
        this.counts.timedOut += 1;
        this.suspend();
      } else {
        this.counts.failed += 1;
        this.failures += 1;
        // Open on a run of failures with no success for a while; a lost connection opens at
        // once through the 'close' event.
        if (this.failures >= this.failureThreshold && Date.now() - this.lastSuccessAt >= this.openAfterMs) {
          this.trip(error instanceof Error ? error.message : String(error));
        }
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Like `run`, but any failure (or an open breaker) answers `fallback()` instead. */
  async tryRun<T>(command: (redis: Redis) => Promise<T>, fallback: () => T | Promise<T>): Promise<T> {
    if (!this.available) {
      this.counts.refused += 1;
      return fallback();
    }
    try {
      return await this.run(command);
    } catch {
      return fallback();
    }
  }

  /**
   * A command timed out: stop sending, and probe at once. An answer resumes sending without a
   * change of state (a busy Redis, or a busy process, answered late); no answer opens the
   * breaker.
   */
  private suspend(): void {
    if (this.closed || this.open || this.suspended) return;
    this.suspended = true;
    void this.probeOnce().then((answered) => {
      if (!answered && this.suspended) this.trip('Redis command timed out, and a probe too');
    });
  }

  private trip(reason: string): void {
    if (this.closed) return;
    this.suspended = false;
    if (!this.open) {
      this.open = true;
      this.onStateChange('down', reason);
    }
    this.failures = 0;
    if (this.probe === null) {
      this.probe = setInterval(() => void this.probeOnce(), this.probeIntervalMs);
      this.probe.unref();
    }
  }

  /**
   * One PING within the command timeout; true (and the breaker closed) when Redis answered. A
   * probe already out is shared: a second timeout waits for its answer rather than taking
   * "no probe sent" for "no answer".
   */
  private probeOnce(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    this.probing ??= this.ping().finally(() => {
      this.probing = null;
    });
    return this.probing;
  }

  private async ping(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        // As in run(): a reply already in the socket lands before the timeout.
        timer = setTimeout(() => setImmediate(() => reject(new Error('probe timed out'))), this.commandTimeoutMs);
      });
      if ((await Promise.race([this.client.ping(), timeout])) === 'PONG') {
        this.recover('Redis answered a probe');
        return true;
      }
      return false;
    } catch {
      // Still down; the next probe tries again.
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  private recover(reason: string): void {
    if (this.closed) return;
    this.lastSuccessAt = Date.now();
    if (this.probe !== null) clearInterval(this.probe);
    this.probe = null;
    this.failures = 0;
    this.suspended = false;
    if (this.open) {
      this.open = false;
      this.onStateChange('ok', reason);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.probe !== null) clearInterval(this.probe);
    this.probe = null;
    try {
      await Promise.race([this.client.quit(), new Promise((resolve) => setTimeout(resolve, this.commandTimeoutMs))]);
    } catch {
      // Already gone.
    }
    this.client.disconnect();
  }
}
