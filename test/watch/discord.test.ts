/** The Discord body of every kind of event stays within Discord's documented webhook body. */
import { describe, expect, it } from 'vitest';
import { discordBody, type WatchEventBody } from '../../src/watch/payload.js';
import { discordValidator } from './discord-schema.js';

const validate = discordValidator();

function event(overrides: Partial<WatchEventBody> = {}, server: Partial<WatchEventBody['server']> = {}): WatchEventBody {
  return {
    event: 'offline',
    watch_id: '5b0c2b8e-4a4e-4c3b-9a51-1f6f3f1c0d11',
    sequence: 3,
    address: 'play.example.net',
    edition: 'java',
    occurred_at: '2026-11-25T17:00:00.000Z',
    down_since: null,
    threshold: null,
    url: 'https://observer.example.net/server/play.example.net',
    ...overrides,
    server: { online: false, players_online: null, players_max: null, version: null, motd: null, error: 'timed out', error_code: 'timeout', ...server },
  };
}

describe('Discord body', () => {
  it.each(['online', 'offline', 'players_at_least', 'test'] as const)('of a %s event passes the schema', (kind) => {
    const body = discordBody(event({ event: kind, threshold: kind === 'players_at_least' ? 50 : null }, { online: kind !== 'offline', players_online: 51, players_max: 100, version: '1.21.1', motd: 'Hello' }));
    expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
  });

  it('stays within every limit with the longest texts a server can send', async () => {
    const long = '§l😀'.repeat(5_000);
    const body = discordBody(
      event({ address: `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}:25566` }, { version: long, motd: long, error: long }),
    );
    expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
  });

  it('the schema refuses what Discord refuses (a title over 256 characters)', () => {
    const body = discordBody(event()) as { embeds: Array<{ title: string }> };
    body.embeds[0]!.title = 'x'.repeat(257);
    expect(validate(body)).toBe(false);
  });
});
