/**
 * Server ids are UUID v5 and must never change: clients store them, and history is keyed by them.
 */
import { describe, expect, it } from 'vitest';
import { serverId, uuidV5 } from '../../src/status/server-id.js';

describe('server ids', () => {
  it('are RFC 9562 UUID v5 (the RFC\'s DNS-namespace example)', () => {
    expect(uuidV5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe('2ed6657d-e927-568b-95e1-2665a8aea6a2');
  });

  it('are the ids Observer has always given these servers', () => {
    expect(serverId('java', 'play.example.com', 25565)).toBe('daa11f3b-7edf-5de1-b7f2-1872fee7265e');
    expect(serverId('bedrock', 'xn--bcher-kva.example', 19132)).toBe('f6ebc64e-271b-52f2-a7ef-cb04bc9684ca');
  });
});
