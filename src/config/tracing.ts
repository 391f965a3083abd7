/**
 * Traces (docs/monitoring.md, "Traces"): OpenTelemetry's own environment variables, read here
 * like every other setting. Without an OTLP endpoint tracing is off, and nothing of
 * OpenTelemetry is loaded (src/core/tracing.ts).
 *
 * The variables keep the meaning the OpenTelemetry specification gives them
 * (opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/):
 *  - OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: the URL spans are POSTed to, used as it is;
 *  - OTEL_EXPORTER_OTLP_ENDPOINT: the collector's base URL, to which `v1/traces` is appended;
 *  - OTEL_SERVICE_NAME: the `service.name` of every span (default `observer`);
 *  - OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG: which traces are kept;
 *  - OTEL_SDK_DISABLED=true: off, whatever else is set;
 *  - OTEL_EXPORTER_OTLP(_TRACES)_PROTOCOL: only the HTTP protocols; Observer's exporter sends
 *    OTLP/HTTP with JSON bodies, which collectors accept on the same port as protobuf.
 * The exporter reads its remaining variables itself (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
 * _COMPRESSION and their _TRACES_ forms).
 */
import { ConfigError } from './error.js';

type Env = Record<string, string | undefined>;

/** The samplers the specification names, bar the remote ones (Jaeger, X-Ray). */
export const TRACE_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type TraceSampler = (typeof TRACE_SAMPLERS)[number];

export interface TracingConfig {
  /** Where spans are POSTed (OTLP/HTTP). */
  tracesUrl: string;
  serviceName: string;
  sampler: TraceSampler;
  /** The share of traces kept by the ratio samplers, 0 to 1. */
  ratio: number;
}

/** The default name when OTEL_SERVICE_NAME is unset. */
const DEFAULT_SERVICE_NAME = 'observer';

function value(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? undefined : raw.trim();
}

function httpUrl(name: string, raw: string): URL {
  const allowed = 'expected an http:// or https:// URL such as http://localhost:4318';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, allowed, raw);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(name, allowed, raw);
  return url;
}

/** The traces URL: the signal's own endpoint as it is, else the base endpoint plus `v1/traces`. */
function tracesUrl(env: Env): string | null {
  const own = value(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  if (own !== undefined) return httpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', own).href;
  const base = value(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (base === undefined) return null;
  const url = httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', base);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/traces`;
  return url.href;
}

function checkProtocol(env: Env): void {
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL']) {
    const raw = value(env, name);
    if (raw !== undefined && raw !== 'http/json' && raw !== 'http/protobuf') {
      throw new ConfigError(name, 'expected http/json or http/protobuf (Observer exports OTLP over HTTP)', raw);
    }
  }
}

function sampler(env: Env): TraceSampler {
  const raw = value(env, 'OTEL_TRACES_SAMPLER')?.toLowerCase() ?? 'parentbased_always_on';
  if (!(TRACE_SAMPLERS as readonly string[]).includes(raw)) {
    throw new ConfigError('OTEL_TRACES_SAMPLER', `expected one of ${TRACE_SAMPLERS.join(', ')}`, env.OTEL_TRACES_SAMPLER ?? '');
  }
  return raw as TraceSampler;
}

function ratio(env: Env): number {
  const raw = value(env, 'OTEL_TRACES_SAMPLER_ARG');
  if (raw === undefined) return 1;
  const number = /^(0(\.\d+)?|1(\.0+)?|\.\d+)$/.test(raw) ? Number(raw) : NaN;
  if (!(number >= 0 && number <= 1)) throw new ConfigError('OTEL_TRACES_SAMPLER_ARG', 'expected a number from 0 to 1 such as 0.25', raw);
  return number;
}

function disabled(env: Env): boolean {
  const raw = value(env, 'OTEL_SDK_DISABLED')?.toLowerCase();
  if (raw === undefined || raw === 'false') return false;
  if (raw === 'true') return true;
  throw new ConfigError('OTEL_SDK_DISABLED', 'expected true or false', env.OTEL_SDK_DISABLED ?? '');
}

/** The tracing settings, or null when traces are not exported (no endpoint, or OTEL_SDK_DISABLED). */
export function parseTracing(env: Env): TracingConfig | null {
  // Checked whether or not tracing is on: a typo should not wait for the day it is turned on.
  const chosen = { sampler: sampler(env), ratio: ratio(env) };
  checkProtocol(env);
  const url = tracesUrl(env);
  if (url === null || disabled(env)) return null;
  return { tracesUrl: url, serviceName: value(env, 'OTEL_SERVICE_NAME') ?? DEFAULT_SERVICE_NAME, ...chosen };
}
