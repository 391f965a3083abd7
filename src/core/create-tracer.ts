/**
 * The tracer the configuration asks for. OpenTelemetry is imported only when traces are
 * exported: without them no module of it is loaded.
 */
import type { TracingConfig } from '../config/tracing.js';
import { NO_TRACER, type Tracer } from './tracing.js';

export async function createTracer(config: TracingConfig | null, onError?: (error: unknown) => void): Promise<Tracer> {
  if (config === null) return NO_TRACER;
  const { openTelemetryTracer } = await import('./otel-tracer.js');
  return openTelemetryTracer(config, onError);
}
