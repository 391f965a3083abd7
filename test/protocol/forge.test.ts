import { describe, expect, it } from 'vitest';
import { decodeForgeOptimized, readModList } from '../../src/protocol/forge.js';
import { parseJavaStatus } from '../../src/protocol/java.js';
import { fixture } from './fixtures.js';

/** The `d` string of a real Forge 1.20.1 server (FML3), see test/fixtures/protocol/README.md. */
const FML3_D = fixture('forge-fml3-d.hex').toString('utf8');

describe('Forge and NeoForge mod lists', () => {
  it('reads FML1 modinfo (Forge 1.7–1.12)', () => {
    const list = readModList({
      modinfo: {
        type: 'FML',
        modList: [
          { modid: 'minecraft', version: '1.12.2' },
          { modid: 'forge', version: '14.23.5.2859' },
          { version: 'no id' },
        ],
      },
    });
    expect(list).toEqual({
      modLoader: 'fml1',
      mods: [
        { id: 'minecraft', version: '1.12.2' },
        { id: 'forge', version: '14.23.5.2859' },
      ],
      modsTruncated: false,
    });
  });

  it('reads FML2 forgeData (Forge 1.13–1.18)', () => {
    const list = readModList({
      forgeData: {
        fmlNetworkVersion: 2,
        channels: [{ res: 'fml:handshake', version: '1.2.3.4', required: true }],
        mods: [
          { modId: 'forge', modmarker: 'ANY' },
          { modId: 'serveronly', modmarker: 'OHNOES\uD83D\uDE31\uD83D\uDE31' },
        ],
      },
    });
    expect(list).toEqual({
      modLoader: 'forge',
      mods: [
        { id: 'forge', version: 'ANY' },
        { id: 'serveronly', version: null },
      ],
      modsTruncated: false,
    });
  });

  it('decodes FML3 compressed forgeData.d captured from a Forge 1.20.1 server', () => {
    const bytes = decodeForgeOptimized(FML3_D);
    expect(bytes?.length).toBe(0x5e);
    const list = readModList({ forgeData: { channels: [], mods: [], truncated: true, fmlNetworkVersion: 3, d: FML3_D } });
    expect(list).toEqual({
      modLoader: 'forge',
      mods: [
        { id: 'minecraft', version: '1.20.1' },
        { id: 'forge', version: 'ANY' },
      ],
      modsTruncated: false,
    });
  });

  it('falls back to the JSON list when d is damaged, without failing the status', () => {
    const damaged = FML3_D.slice(0, 20);
    expect(decodeForgeOptimized(damaged)).toBeNull();
    const result = parseJavaStatus({
      description: 'modded',
      forgeData: { fmlNetworkVersion: 3, d: damaged, mods: [], channels: [] },
    });
    expect(result.extra).toEqual({ modLoader: 'forge', mods: [] });
    // A declared size of 2^30 bytes in a short string is refused before allocating.
    expect(decodeForgeOptimized('\u7fff\u7fff' + 'a'.repeat(10))).toBeNull();
  });

  it('recognises NeoForge by isModded, with or without a list', () => {
    expect(readModList({ isModded: true })).toEqual({ modLoader: 'neoforge', mods: null, modsTruncated: false });
    expect(
      readModList({ isModded: true, forgeData: { fmlNetworkVersion: 3, d: FML3_D, mods: [], channels: [] } })?.modLoader,
    ).toBe('neoforge');
    const result = parseJavaStatus({ isModded: true, description: 'neo' });
    expect(result.extra).toEqual({ modLoader: 'neoforge' });
  });

  it('caps the list and cleans ids', () => {
    const modList = Array.from({ length: 1500 }, (_, i) => ({ modid: `§amod${i}`, version: '1' }));
    const list = readModList({ modinfo: { type: 'FML', modList } });
    expect(list?.mods).toHaveLength(1024);
    expect(list?.mods?.[0]).toEqual({ id: 'mod0', version: '1' });
    expect(list?.modsTruncated).toBe(true);
  });

  it('says nothing for a vanilla status', () => {
    expect(readModList({ description: 'vanilla', isModded: false })).toBeNull();
    expect(parseJavaStatus({ description: 'vanilla' }).extra).toEqual({});
  });
});
