/**
 * Traces (docs/monitoring.md, "Traces"): the tracer every part of Observer is handed. Without
 * an OTLP endpoint it is NO_TRACER, whose spans are one shared object that records nothing and
 * whose `enabled` lets callers skip even that; OpenTelemetry is then never loaded. With one,
 * createTracer (create-tracer.ts) loads ./otel-tracer.ts, which exports spans over OTLP/HTTP.
 *
 * A span is the child of the span current where it starts: the current span follows the work
 * across awaits (AsyncLocalStorage, in the OpenTelemetry tracer only). Attributes follow
 * OpenTelemetry's semantic conventions where they name the thing, and never hold a client's
 * address or user agent.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export type SpanValue = string | number | boolean;

/** What OpenTelemetry calls the kind: `client` for a call to another service, `internal` otherwise. */
export type SpanKind = 'internal' | 'client';

export interface SpanOptions {
  kind?: SpanKind;
  /** A trace of its own rather than a child of the current span (work that outlives what queued it). */
  root?: boolean;
}

export interface TraceSpan {
  /** False for the no-op span and for spans the sampler dropped: attributes are thrown away. */
  readonly recording: boolean;
  set(name: string, value: SpanValue): void;
  /** Marks the span failed with a code (`error.type`), never a message or a stack. */
  fail(code: string): void;
  /** Ends a span from `start` (a span from `span` ends by itself). */
  end(): void;
}

export interface Tracer {
  /** False for NO_TRACER: callers skip the wrapping altogether. */
  readonly enabled: boolean;
  /**
   * Runs `work` in a new span, the current span within it, and ends the span when `work`
   * settles; a throw marks the span failed with the error's code.
   */
  span<T>(name: string, work: (span: TraceSpan) => Promise<T>, options?: SpanOptions): Promise<T>;
  /** The same for work that does not wait. */
  spanSync<T>(name: string, work: (span: TraceSpan) => T, options?: SpanOptions): T;
  /** A span that is ended by the caller (or never, and then never exported), without becoming current. */
  start(name: string, options?: SpanOptions): TraceSpan;
  /** Answers one HTTP request within its server span (src/http/tracing.ts). */
  serve(req: IncomingMessage, res: ServerResponse, handle: () => void): void;
  /** Names the current request's server span after its route template, once it is known. */
  route(method: string, route: string | null): void;
  /** Runs `next` with the request's server span current again (after the body was read). */
  resume(req: IncomingMessage, next: () => void): void;
  /** Sends the spans ended so far. */
  flush(): Promise<void>;
  /** Sends what is left and stops. */
  close(): Promise<void>;
}

const NO_SPAN: TraceSpan = {
  recording: false,
  set() {},
  fail() {},
  end() {},
};

/** The tracer when traces are off: it runs the work and records nothing. */
export const NO_TRACER: Tracer = {
  enabled: false,
  span: (_name, work) => work(NO_SPAN),
  spanSync: (_name, work) => work(NO_SPAN),
  start: () => NO_SPAN,
  serve: (_req, _res, handle) => handle(),
  route() {},
  resume: (_req, next) => next(),
  flush: async () => {},
  close: async () => {},
};

/**
 * What a span's `error.type` says about a failure: the stable code of our errors (ProbeError,
 * ObserverError), else the class's name. Never the message, which may hold addresses.
 */
export function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[a-z0-9_]{1,64}$/i.test(code)) return code;
  return error instanceof Error ? error.name : 'unknown';
}
