import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';

/** pino logger options; false silences logging (tests). */
export type LoggerOption = { level?: string; stream?: NodeJS.WritableStream } | false | undefined;

/**
 * The service's log, made before anything else (compose.ts) so that the store's migrations are
 * logged from the start; the app logs into it too. Null when logging is off.
 */
export function serviceLogger(level: string, option: LoggerOption): FastifyBaseLogger | null {
  if (option === false) return null;
  // Never a client IP or user agent in the logs: requests are logged by our own onResponse
  // hook with its own fields only.
  const options = { level: option?.level ?? level, serializers: { req: () => ({}), res: () => ({}) } };
  return option?.stream ? pino(options, option.stream) : pino(options);
}

type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1];
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/**
 * `request.log` that becomes a pino child logger (with the request id) only when something
 * is logged. Fastify builds one child logger per request; with per-request logging off
 * (LOG_REQUESTS), most requests log nothing, and building the child would be a large part of
 * the CPU time of a health check.
 */
class LazyRequestLogger {
  private real: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildOptions,
  ) {}

  private get logger(): FastifyBaseLogger {
    return (this.real ??= this.parent.child(this.bindings, this.options));
  }

  get level(): string {
    return this.real?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  fatal(...args: unknown[]): void { this.write('fatal', args); }
  error(...args: unknown[]): void { this.write('error', args); }
  warn(...args: unknown[]): void { this.write('warn', args); }
  info(...args: unknown[]): void { this.write('info', args); }
  debug(...args: unknown[]): void { this.write('debug', args); }
  trace(...args: unknown[]): void { this.write('trace', args); }
  silent(): void {}

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }

  private write(level: Level, args: unknown[]): void {
    const logger = this.logger;
    (logger[level] as (...a: unknown[]) => void).apply(logger, args);
  }
}

/** Fastify's `childLoggerFactory`. */
export function lazyChildLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildOptions): FastifyBaseLogger {
  return new LazyRequestLogger(logger, bindings, options) as unknown as FastifyBaseLogger;
}
