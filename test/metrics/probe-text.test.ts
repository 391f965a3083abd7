/**
 * The series of GET /probe as text, from a probe's outcome (pure): tables of readings and the
 * exact lines they give, the escaping of label values, and the format an Accept header picks.
 */
import { describe, expect, it } from 'vitest';
import { offlineStatus, type ServerStatus } from '../../src/core/types.js';
import {
  CONTENT_TYPES,
  LABEL_VALUE_MAX,
  OFFLINE_REASONS,
  escapeLabelValue,
  expositionFormat,
  offlineReading,
  probeExposition,
  readingOf,
  type EditionReading,
} from '../../src/metrics/probe-text.js';

const query = { host: 'play.example.net', port: 25565, legacy: false, bedrock: false };

function online(fields: Partial<ServerStatus> = {}): ServerStatus {
  return offlineStatus(query, {
    online: true,
    version: { name: 'Paper 1.21.4', protocol: 769 },
    players: { online: 7, max: 50, sample: [] },
    roundTripLatency: 23,
    icmp: true,
    checked_at: '2026-01-01T00:00:00.000Z',
    ...fields,
  });
}

/** The sample lines (comments left out) of an exposition. */
function sampleLines(text: string): string[] {
  return text.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
}

describe('readingOf', () => {
  it.each<[string, ServerStatus, 'HIT' | 'MISS' | 'STALE', boolean, Partial<EditionReading>]>([
    ['an online answer, pinged for this probe', online(), 'MISS', false, { online: true, reason: null, players: { online: 7, max: 50 }, latencyMs: 23, icmp: true, cached: false, stale: false, query: null }],
    ['a cached answer', online(), 'HIT', false, { cached: true }],
    ['a stale answer', online({ stale: true }), 'STALE', false, { cached: true, stale: true, online: true }],
    ['an offline answer', offlineStatus(query, { error: 'connection refused', error_code: 'connection_refused' }), 'MISS', false, { online: false, reason: 'connection_refused', players: null, version: null, icmp: null }],
    ['an offline answer without a code (cached by an older version)', offlineStatus(query, { error: 'x' }), 'HIT', false, { reason: 'internal_error' }],
    ['a Query that answered', online({ queryResult: { players: [] } }), 'MISS', true, { query: true }],
    ['a Query that failed', online({ queryResult: { error: 'timed out', error_code: 'timeout' } }), 'MISS', true, { query: false }],
  ])('%s', (_name, status, cache, queried, expected) => {
    expect(readingOf('java', status, cache, queried)).toMatchObject(expected);
  });
});

describe('probeExposition', () => {
  const java = readingOf('java', online(), 'MISS', false);
  const zeros = (edition: string, except?: string) => OFFLINE_REASONS.map((r) => `minecraft_offline_reason{edition="${edition}",reason="${r}"} ${r === except ? 1 : 0}`);

  it.each<[string, EditionReading[], string[]]>([
    [
      'an online Java server',
      [java],
      [
        'probe_success 1',
        'probe_duration_seconds 0.25',
        'minecraft_players_online{edition="java"} 7',
        'minecraft_players_max{edition="java"} 50',
        'minecraft_latency_seconds{edition="java"} 0.023',
        'minecraft_version_info{edition="java",name="Paper 1.21.4",protocol="769"} 1',
        'minecraft_icmp_reachable{edition="java"} 1',
        ...zeros('java'),
        'minecraft_cached{edition="java"} 0',
        'minecraft_stale{edition="java"} 0',
      ],
    ],
    [
      'an offline server without ICMP: no players, latency, version or ICMP series; its reason',
      [readingOf('java', offlineStatus(query, { error: 'timed out', error_code: 'timeout' }), 'HIT', false)],
      ['probe_success 0', 'probe_duration_seconds 0.25', ...zeros('java', 'timeout'), 'minecraft_cached{edition="java"} 1', 'minecraft_stale{edition="java"} 0'],
    ],
    [
      'both editions, one answering, with a Query asked',
      [readingOf('java', online({ icmp: false, queryResult: { players: [] } }), 'MISS', true), offlineReading('bedrock', 'dns_not_found', true)],
      [
        'probe_success 1',
        'probe_duration_seconds 0.25',
        'minecraft_players_online{edition="java"} 7',
        'minecraft_players_max{edition="java"} 50',
        'minecraft_latency_seconds{edition="java"} 0.023',
        'minecraft_version_info{edition="java",name="Paper 1.21.4",protocol="769"} 1',
        'minecraft_icmp_reachable{edition="java"} 0',
        ...zeros('java'),
        ...zeros('bedrock', 'dns_not_found'),
        'minecraft_cached{edition="java"} 0',
        'minecraft_cached{edition="bedrock"} 0',
        'minecraft_stale{edition="java"} 0',
        'minecraft_stale{edition="bedrock"} 0',
        'minecraft_query_success{edition="java"} 1',
        'minecraft_query_success{edition="bedrock"} 0',
      ],
    ],
  ])('%s', (_name, editions, lines) => {
    expect(sampleLines(probeExposition({ editions, durationSeconds: 0.25 }, 'text'))).toEqual(lines);
    expect(sampleLines(probeExposition({ editions, durationSeconds: 0.25 }, 'openmetrics'))).toEqual(lines);
  });

  it('writes HELP and TYPE before each family, and in OpenMetrics the units and # EOF', () => {
    const text = probeExposition({ editions: [java], durationSeconds: 0.25 }, 'text');
    expect(text).toContain('# TYPE probe_success gauge\nprobe_success 1\n');
    expect(text).toContain('# TYPE minecraft_version_info gauge\nminecraft_version_info{');
    expect(text).not.toContain('# EOF');
    expect(text).not.toContain('# UNIT');
    expect(text.endsWith('\n')).toBe(true);
    const open = probeExposition({ editions: [java], durationSeconds: 0.25 }, 'openmetrics');
    expect(open).toContain('# TYPE minecraft_version_info gauge\nminecraft_version_info{');
    expect(open).toContain('# TYPE probe_duration_seconds gauge\n# UNIT probe_duration_seconds seconds\nprobe_duration_seconds 0.25\n');
    expect(open.endsWith('\n# EOF\n')).toBe(true);
  });
});

describe('escapeLabelValue', () => {
  it.each([
    ['1.21.4', '1.21.4'],
    ['say "hi"', 'say \\"hi\\"'],
    ['back\\slash', 'back\\\\slash'],
    ['two\nlines', 'two\\nlines'],
    ['§cPaper\u0000\u0007\r\t', '§cPaper'],
    ['Velocity 3.3.0 ✓', 'Velocity 3.3.0 ✓'],
  ])('%j → %j', (value, escaped) => {
    expect(escapeLabelValue(value)).toBe(escaped);
  });

  it(`keeps at most ${LABEL_VALUE_MAX} characters, never half of one`, () => {
    const long = '😀'.repeat(LABEL_VALUE_MAX + 10);
    expect(Array.from(escapeLabelValue(long))).toHaveLength(LABEL_VALUE_MAX);
    expect(escapeLabelValue(long)).toBe('😀'.repeat(LABEL_VALUE_MAX));
  });
});

describe('expositionFormat', () => {
  it.each<[string | undefined, 'text' | 'openmetrics']>([
    [undefined, 'text'],
    ['*/*', 'text'],
    ['text/plain', 'text'],
    ['application/json', 'text'],
    ['application/openmetrics-text', 'openmetrics'],
    // What Prometheus 2.x sends.
    ['application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1', 'openmetrics'],
    ['text/plain;version=0.0.4;q=1, application/openmetrics-text;q=0.5', 'text'],
    ['application/openmetrics-text;q=0', 'text'],
    ['Application/OpenMetrics-Text; Version=1.0.0', 'openmetrics'],
  ])('%j → %s', (accept, format) => {
    expect(expositionFormat(accept)).toBe(format);
  });

  it('names each format by the content type its scrapers expect', () => {
    expect(CONTENT_TYPES).toEqual({
      text: 'text/plain; version=0.0.4; charset=utf-8',
      openmetrics: 'application/openmetrics-text; version=1.0.0; charset=utf-8',
    });
  });
});
