/**
 * The tracer with OpenTelemetry behind it (./tracing.ts says what a tracer does). Loaded only
 * when traces are exported. Spans go in batches to the OTLP/HTTP endpoint as JSON; the
 * current span is kept in an AsyncLocalStorage of this tracer's own, so nothing global is
 * registered (no global tracer provider, context manager or propagator).
 *
 * Server spans of HTTP requests carry the method, the path without its query string, the
 * route template and the status code; never the client's address (the peer's or
 * X-Forwarded-For) or its user agent. An incoming `traceparent` (W3C Trace Context) makes the
 * request's span part of the caller's trace, and so takes the caller's sampling decision under
 * the parent-based samplers, as the specification has it; under the others the caller has no
 * say (see KeyedRatioSampler).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHmac, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, defaultTextMapGetter, trace, type Context, type Span, type Tracer as OtelTracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator, setGlobalErrorHandler } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
  type SamplingResult,
} from '@opentelemetry/sdk-trace';
import type { TracingConfig } from '../config/tracing.js';
import { SERVICE_VERSION } from './service-info.js';
import { errorType, type SpanKind as Kind, type SpanOptions, type SpanValue, type TraceSpan, type Tracer } from './tracing.js';

const KINDS: Record<Kind, SpanKind> = { internal: SpanKind.INTERNAL, client: SpanKind.CLIENT };

/** HTTP methods as the semantic conventions list them; any other is `_OTHER`. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);

/** Longest attribute value kept (a path may be long). */
const ATTRIBUTE_LENGTH = 1_024;

/** Export failures are reported at most this often (a collector that is down fails every batch). */
const ERROR_REPORT_MS = 60_000;

class Handle implements TraceSpan {
  readonly recording: boolean;
  constructor(private readonly span: Span) {
    this.recording = span.isRecording();
  }
  set(name: string, value: SpanValue): void {
    this.span.setAttribute(name, value);
  }
  fail(code: string): void {
    this.span.setAttribute('error.type', code);
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: code });
  }
  end(): void {
    this.span.end();
  }
}

/**
 * `traceidratio` whose choice a caller cannot steer. OpenTelemetry's ratio sampler keeps a
 * trace when a number read from its ID is under the ratio, and the ID is the caller's when the
 * request carries a `traceparent`: a caller could send IDs that are always kept. This one reads
 * the number from a keyed hash of the ID, under a key of the process's own, so that every span
 * of a trace gets the same choice and the configured share of traces is kept whatever IDs
 * callers choose.
 */
class KeyedRatioSampler implements Sampler {
  private readonly key = randomBytes(32);
  /** Kept when the hash's first 32 bits are under this. */
  private readonly bound: number;

  constructor(private readonly ratio: number) {
    this.bound = Math.floor(Math.min(Math.max(ratio, 0), 1) * 2 ** 32);
  }

  shouldSample(_context: Context, traceId: string): SamplingResult {
    const kept = createHmac('sha256', this.key).update(traceId).digest().readUInt32BE(0) < this.bound;
    return { decision: kept ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD };
  }

  toString(): string {
    return `KeyedRatio{${this.ratio}}`;
  }
}

export function samplerOf(config: Pick<TracingConfig, 'sampler' | 'ratio'>): Sampler {
  switch (config.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new KeyedRatioSampler(config.ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.ratio) });
  }
}

class OpenTelemetryTracer implements Tracer {
  readonly enabled = true;
  private readonly current = new AsyncLocalStorage<Context>();
  /** Each request's context, for `resume`. */
  private readonly requests = new WeakMap<IncomingMessage, Context>();
  /** The requests' server spans, which `route` names. */
  private readonly serverSpans = new WeakSet<Span>();
  private readonly propagator = new W3CTraceContextPropagator();

  constructor(
    private readonly provider: TracerProvider,
    private readonly tracer: OtelTracer,
    private readonly report: (error: unknown) => void,
  ) {}

  async span<T>(name: string, work: (span: TraceSpan) => Promise<T>, options?: SpanOptions): Promise<T> {
    const parent = this.parentOf(options);
    const span = this.tracer.startSpan(name, { kind: KINDS[options?.kind ?? 'internal'] }, parent);
    const handle = new Handle(span);
    try {
      return await this.current.run(trace.setSpan(parent, span), () => work(handle));
    } catch (error) {
      handle.fail(errorType(error));
      throw error;
    } finally {
      span.end();
    }
  }

  spanSync<T>(name: string, work: (span: TraceSpan) => T, options?: SpanOptions): T {
    const parent = this.parentOf(options);
    const span = this.tracer.startSpan(name, { kind: KINDS[options?.kind ?? 'internal'] }, parent);
    const handle = new Handle(span);
    try {
      return this.current.run(trace.setSpan(parent, span), () => work(handle));
    } catch (error) {
      handle.fail(errorType(error));
      throw error;
    } finally {
      span.end();
    }
  }

  start(name: string, options?: SpanOptions): TraceSpan {
    return new Handle(this.tracer.startSpan(name, { kind: KINDS[options?.kind ?? 'internal'] }, this.parentOf(options)));
  }

  /** The context a new span starts in: the current one, or none for a root span. */
  private parentOf(options: SpanOptions | undefined): Context {
    return options?.root ? ROOT_CONTEXT : (this.current.getStore() ?? ROOT_CONTEXT);
  }

  serve(req: IncomingMessage, res: ServerResponse, handle: () => void): void {
    const parent = this.propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter);
    const method = METHODS.has(req.method ?? '') ? req.method! : '_OTHER';
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const span = this.tracer.startSpan(
      method === '_OTHER' ? 'HTTP' : method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': method,
          'url.path': query === -1 ? url : url.slice(0, query),
          'url.scheme': 'http',
          'network.protocol.version': req.httpVersion,
        },
      },
      parent,
    );
    const context = trace.setSpan(parent, span);
    this.requests.set(req, context);
    this.serverSpans.add(span);
    res.once('close', () => {
      // A server span fails on a 5xx only (a 4xx is the client's), or when no answer was sent.
      const failure = !res.headersSent ? 'aborted' : res.statusCode >= 500 ? String(res.statusCode) : null;
      if (res.headersSent) span.setAttribute('http.response.status_code', res.statusCode);
      if (failure !== null) {
        span.setAttribute('error.type', failure);
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    });
    this.current.run(context, handle);
  }

  route(method: string, route: string | null): void {
    const span = trace.getSpan(this.current.getStore() ?? ROOT_CONTEXT);
    if (span === undefined || route === null || !this.serverSpans.has(span)) return;
    span.setAttribute('http.route', route);
    if (METHODS.has(method)) span.updateName(`${method} ${route}`);
  }

  resume(req: IncomingMessage, next: () => void): void {
    const context = this.requests.get(req);
    if (context === undefined) next();
    else this.current.run(context, next);
  }

  /** A collector that cannot be reached is reported, never thrown: a stop must not fail for it. */
  flush(): Promise<void> {
    return this.provider.forceFlush().catch(this.report);
  }

  close(): Promise<void> {
    return this.provider.shutdown().catch(this.report);
  }
}

/**
 * Export failures, reported through `onError` once a minute at most, from the batches sent in
 * the background (through OpenTelemetry's error handler) and from flush and close alike.
 */
function exportErrorReporter(onError: ((error: unknown) => void) | undefined): (error: unknown) => void {
  let last = -Infinity;
  const report = (error: unknown) => {
    const now = performance.now();
    if (now - last < ERROR_REPORT_MS) return;
    last = now;
    onError?.(error);
  };
  setGlobalErrorHandler(report);
  return report;
}

export function openTelemetryTracer(config: TracingConfig, onError?: (error: unknown) => void): Tracer {
  const report = exportErrorReporter(onError);
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.serviceName, 'service.version': SERVICE_VERSION }),
    sampler: samplerOf(config),
    spanLimits: { attributeValueLengthLimit: ATTRIBUTE_LENGTH },
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: config.tracesUrl }) })],
  });
  return new OpenTelemetryTracer(provider, provider.getTracer('observer', SERVICE_VERSION), report);
}
