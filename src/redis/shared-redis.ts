/**
 * SharedRedis: Redis as an accelerator, never a single point of failure.
 *
 * Every command runs under a short timeout (REDIS_COMMAND_TIMEOUT_MS, 250 ms by default), and
 * the connection has no offline queue, so a dead or paused Redis fails a command at once or
 * within the timeout. A circuit breaker opens on the connection closing, or after a few failed
 * commands in a row with no success for half a second; while it is open no command is sent,
 * `available` is false and callers use their local implementation (memory cache, local rate
 * limits, local coalescing). A probe (PING) runs every `probeIntervalMs` while it is open and
 * closes it when Redis answers again, even a Redis restarted empty.
 */
import { Redis } from 'ioredis';

export type RedisState = 'ok' | 'down';

export interface SharedRedisOptions {
  /** Longest wait on one command, milliseconds. */
  commandTimeoutMs?: number;
  /** Consecutive failed commands that open the breaker. */
  failureThreshold?: number;
  /** How often an open breaker probes Redis, milliseconds. */
  probeIntervalMs?: number;
  /** Failures open the breaker only when no command has succeeded for this long, milliseconds. */
  openAfterMs?: number;
  /** Hears about state changes (for the log). */
  onStateChange?: (state: RedisState, reason: string) => void;
}

export const DEFAULT_REDIS_COMMAND_TIMEOUT_MS = 250;

/** Thrown instead of sending a command while the breaker is open. */
export class RedisUnavailableError extends Error {
  constructor(message = 'Redis is unavailable') {
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
  private failures = 0;
  private probe: NodeJS.Timeout | null = null;
  private probing = false;
  private closed = false;

  constructor(url: string, options: SharedRedisOptions = {}) {
    this.commandTimeoutMs = options.commandTimeoutMs ?? DEFAULT_REDIS_COMMAND_TIMEOUT_MS;
    this.failureThreshold = options.failureThreshold ?? 3;
    this.probeIntervalMs = options.probeIntervalMs ?? 500;
    this.openAfterMs = options.openAfterMs ?? 500;
    this.onStateChange = options.onStateChange ?? (() => {});
    this.client = new Redis(url, {
      commandTimeout: this.commandTimeoutMs,
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

  /** True while commands are sent to Redis (breaker closed). */
  get available(): boolean {
    return !this.open && !this.closed;
  }

  /** `ok` while shared, `down` while the instance runs on its local fallbacks. */
  get state(): RedisState {
    return this.available ? 'ok' : 'down';
  }

  /** For health: `degraded` once a command has failed since the last success. */
  health(): 'ok' | 'degraded' | 'down' {
    if (!this.available) return 'down';
    return this.failures > 0 ? 'degraded' : 'ok';
  }

  /**
   * Runs `command` against Redis within the command timeout. Rejects at once with
   * RedisUnavailableError while the breaker is open; a failure counts towards opening it.
   */
  async run<T>(command: (redis: Redis) => Promise<T>): Promise<T> {
    if (!this.available) throw new RedisUnavailableError();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      // After a long busy tick the timers phase runs before the poll phase: a reply already in
      // the socket would lose to its own timeout. setImmediate lets pending I/O land first.
      timer = setTimeout(() => setImmediate(() => reject(new RedisUnavailableError('Redis command timed out'))), this.commandTimeoutMs);
    });
    try {
      const result = await Promise.race([command(this.client), timeout]);
      this.failures = 0;
      this.lastSuccessAt = Date.now();
      return result;
    } catch (error) {
      this.failures += 1;
      // Open on a run of failures with no success for a while: a busy instance whose replies
      // come late now and then stays shared; a paused or dead Redis opens within a second.
      if (this.failures >= this.failureThreshold && Date.now() - this.lastSuccessAt >= this.openAfterMs) {
        this.trip(error instanceof Error ? error.message : String(error));
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Like `run`, but any failure (or an open breaker) answers `fallback()` instead. */
  async tryRun<T>(command: (redis: Redis) => Promise<T>, fallback: () => T | Promise<T>): Promise<T> {
    if (!this.available) return fallback();
    try {
      return await this.run(command);
    } catch {
      return fallback();
    }
  }

  private trip(reason: string): void {
    if (this.closed) return;
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

  private async probeOnce(): Promise<void> {
    if (this.probing || this.closed) return;
    this.probing = true;
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('probe timed out')), this.commandTimeoutMs);
      });
      if ((await Promise.race([this.client.ping(), timeout])) === 'PONG') this.recover('Redis answered a probe');
    } catch {
      // Still down; the next probe tries again.
    } finally {
      clearTimeout(timer);
      this.probing = false;
    }
  }

  private recover(reason: string): void {
    if (this.closed) return;
    this.lastSuccessAt = Date.now();
    if (this.probe !== null) clearInterval(this.probe);
    this.probe = null;
    this.failures = 0;
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
