/**
 * Which traces a caller's `traceparent` can get exported (docs/monitoring.md, "Traces"): under
 * the parent-based samplers its sampled flag decides, as OpenTelemetry specifies; under
 * `traceidratio` neither its flag nor the trace ID it chose does.
 */
import { ROOT_CONTEXT, SpanKind, TraceFlags, trace, type Context } from '@opentelemetry/api';
import { SamplingDecision, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { samplerOf } from '../../src/core/otel-tracer.js';

/** The context of a request whose `traceparent` names `traceId` with the sampled flag `sampled`. */
function callerContext(traceId: string, sampled: boolean): Context {
  return trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId: '00f067aa0ba902b7', traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE, isRemote: true });
}

/** Trace IDs whose four 32-bit words cancel out (XOR 0): OpenTelemetry's ratio sampler keeps every one. */
function steeredTraceIds(count: number): string[] {
  return Array.from({ length: count }, (_unused, i) => {
    const a = (0x10000000 + i * 7919).toString(16).padStart(8, '0');
    const b = (0x20000000 + i * 104_729).toString(16).padStart(8, '0');
    return `${a}${a}${b}${b}`;
  });
}

function kept(sampler: ReturnType<typeof samplerOf>, traceIds: string[], sampled: boolean): number {
  return traceIds.filter((traceId) => {
    const result = sampler.shouldSample(callerContext(traceId, sampled), traceId, 'GET /api/v1/status/:address', SpanKind.SERVER, {}, []);
    return result.decision === SamplingDecision.RECORD_AND_SAMPLED;
  }).length;
}

describe('sampling of a request that carries a traceparent', () => {
  const ids = steeredTraceIds(2000);

  it('under traceidratio, keeps about the configured share of traces whatever IDs and flags callers choose', () => {
    // The control: the stock ratio sampler keeps every one of these IDs.
    expect(kept(new TraceIdRatioBasedSampler(0.01), ids, true)).toBe(ids.length);
    const sampler = samplerOf({ sampler: 'traceidratio', ratio: 0.01 });
    // 1 % of 2,000 is 20; 60 is far outside what chance gives.
    expect(kept(sampler, ids, true)).toBeLessThan(60);
    expect(kept(sampler, ids, false)).toBeLessThan(60);
    expect(kept(samplerOf({ sampler: 'traceidratio', ratio: 1 }), ids, false)).toBe(ids.length);
    expect(kept(samplerOf({ sampler: 'traceidratio', ratio: 0 }), ids, true)).toBe(0);
  });

  it('gives every span of one trace the same choice under traceidratio', () => {
    const sampler = samplerOf({ sampler: 'traceidratio', ratio: 0.5 });
    for (const id of ids.slice(0, 200)) expect(kept(sampler, [id, id, id], true)).toBeOneOf([0, 3]);
  });

  it('under always_on and always_off, ignores the caller\'s flag', () => {
    expect(kept(samplerOf({ sampler: 'always_on', ratio: 1 }), ids, false)).toBe(ids.length);
    expect(kept(samplerOf({ sampler: 'always_off', ratio: 1 }), ids, true)).toBe(0);
  });

  it('under the parent-based samplers, follows the caller\'s sampled flag, as the configuration asks', () => {
    for (const name of ['parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const) {
      const sampler = samplerOf({ sampler: name, ratio: 0.01 });
      expect(kept(sampler, ids, true), name).toBe(ids.length);
      expect(kept(sampler, ids, false), name).toBe(0);
    }
  });
});
