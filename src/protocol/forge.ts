/**
 * Mod lists that modded Java servers add to their status JSON, normalised to
 * `{ modLoader, mods: [{ id, version }], modsTruncated }`.
 *
 * - FML1 (Forge 1.7–1.12): `modinfo: { type: "FML", modList: [{ modid, version }] }`.
 * - FML2 (Forge 1.13–1.18): `forgeData: { fmlNetworkVersion: 2, mods: [{ modId, modmarker }], channels }`.
 * - FML3 (Forge 1.18.1+): `forgeData: { fmlNetworkVersion: 3, d: "<15 bits per UTF-16 unit>" }`, the
 *   binary layout of Forge's `ServerStatusPing.Serializer` (see decodeForgeOptimized).
 * - NeoForge: `isModded: true` (and `forgeData` when it sends one).
 * https://minecraft.wiki/w/Java_Edition_protocol/Server_List_Ping (Forge additions), Forge's
 * net.minecraftforge.network.ServerStatusPing.
 */
import { isObject } from '../core/json.js';
import { cleanServerText } from '../motd/index.js';
import { ByteReader } from './codec.js';

export type ModLoader = 'fml1' | 'forge' | 'neoforge';

export interface ModInfo {
  id: string;
  /** null when the server does not say (Forge's "server only" marker). */
  version: string | null;
}

export interface ModListInfo {
  modLoader: ModLoader;
  /** null when the loader is known but the server sends no list. */
  mods: ModInfo[] | null;
  /** The server (or this parser, past MAX_MODS) cut the list short. */
  modsTruncated: boolean;
}

/** At most this many mods are kept. */
export const MAX_MODS = 1024;
const MAX_MOD_TEXT = 128;
/** Decoded size of the FML3 `d` blob that is still believable (Forge caps it near 60,000 bytes). */
const MAX_FORGE_BINARY = 256 * 1024;

/** Forge's marker for "any version / server-side only" (NetworkConstants.IGNORESERVERONLY). */
const IGNORE_SERVER_ONLY_PREFIX = 'OHNOES';

function modEntry(id: unknown, version: unknown): ModInfo | null {
  const cleanId = cleanServerText(id, MAX_MOD_TEXT);
  if (cleanId === '') return null;
  const cleanVersion = typeof version === 'string' && !version.startsWith(IGNORE_SERVER_ONLY_PREFIX)
    ? cleanServerText(version, MAX_MOD_TEXT)
    : null;
  return { id: cleanId, version: cleanVersion };
}

function modsFromArray(list: unknown, idKey: string, versionKey: string): { mods: ModInfo[]; truncated: boolean } {
  const mods: ModInfo[] = [];
  if (!Array.isArray(list)) return { mods, truncated: false };
  for (const item of list) {
    if (mods.length >= MAX_MODS) return { mods, truncated: true };
    if (!isObject(item)) continue;
    const entry = modEntry(item[idKey], item[versionKey]);
    if (entry) mods.push(entry);
  }
  return { mods, truncated: false };
}

/**
 * Decodes Forge's `encodeOptimized` string: two UTF-16 units hold the byte length (15 bits
 * each), then every unit carries 15 bits of data, least significant first. Forge's encoder
 * emits only 15 of the up to 22 bits left at the end, and its decoder pads the last byte from
 * what remains, so the declared length may exceed the carried bits by one byte. Returns null
 * when the declared length does not fit the string or the cap.
 */
export function decodeForgeOptimized(encoded: string): Buffer | null {
  if (encoded.length < 2) return null;
  const size = (encoded.charCodeAt(0) & 0x7fff) | ((encoded.charCodeAt(1) & 0x7fff) << 15);
  const capacity = Math.floor(((encoded.length - 2) * 15) / 8) + 1;
  if (size > capacity || size > MAX_FORGE_BINARY) return null;
  const out = Buffer.alloc(size);
  let written = 0;
  let buffer = 0;
  let bits = 0;
  for (let i = 2; i < encoded.length && written < size; i++) {
    while (bits >= 8 && written < size) {
      out[written++] = buffer & 0xff;
      buffer >>>= 8;
      bits -= 8;
    }
    buffer |= (encoded.charCodeAt(i) & 0x7fff) << bits;
    bits += 15;
  }
  while (written < size) {
    out[written++] = buffer & 0xff;
    buffer >>>= 8;
  }
  return out;
}

/**
 * Reads the mod list from FML3 binary data (ServerStatusPing.Serializer#serialize):
 * boolean truncated, unsigned short mod count, then per mod: VarInt (channel count << 1 |
 * server-only flag), String mod id, String version unless server-only, and per channel
 * String path, String version, boolean required. Channels are skipped.
 */
export function decodeForgeBinaryModList(bytes: Uint8Array): { mods: ModInfo[]; truncated: boolean } {
  const reader = new ByteReader(bytes);
  let truncated = reader.readBoolean();
  const count = reader.readUInt16BE();
  const mods: ModInfo[] = [];
  for (let i = 0; i < count; i++) {
    const flags = reader.readVarInt();
    if (flags < 0) throw new Error('negative channel count');
    const channels = flags >>> 1;
    const serverOnly = (flags & 1) !== 0;
    const id = reader.readString(32767 * 3);
    const version = serverOnly ? null : reader.readString(32767 * 3);
    for (let c = 0; c < channels; c++) {
      reader.readString(32767 * 3);
      reader.readString(32767 * 3);
      reader.readBoolean();
    }
    if (mods.length >= MAX_MODS) {
      truncated = true;
      break;
    }
    const entry = modEntry(id, version ?? undefined);
    if (entry) mods.push(entry);
  }
  return { mods, truncated };
}

function fromForgeData(forgeData: Record<string, unknown>): { mods: ModInfo[]; truncated: boolean } | null {
  if (typeof forgeData.d === 'string') {
    const binary = decodeForgeOptimized(forgeData.d);
    if (binary) {
      try {
        return decodeForgeBinaryModList(binary);
      } catch {
        // Malformed blob: fall through to the JSON list (kept for old clients, usually empty).
      }
    }
  }
  if (!Array.isArray(forgeData.mods)) return null;
  const list = modsFromArray(forgeData.mods, 'modId', 'modmarker');
  return { mods: list.mods, truncated: list.truncated || forgeData.truncated === true };
}

/** The mod loader and mod list a status JSON advertises, or null for an unmodded server. */
export function readModList(status: Record<string, unknown>): ModListInfo | null {
  const neoforge = status.isModded === true;
  if (isObject(status.forgeData)) {
    const list = fromForgeData(status.forgeData);
    return {
      modLoader: neoforge ? 'neoforge' : 'forge',
      mods: list ? list.mods : null,
      modsTruncated: list ? list.truncated : false,
    };
  }
  if (isObject(status.modinfo) && Array.isArray(status.modinfo.modList)) {
    const list = modsFromArray(status.modinfo.modList, 'modid', 'version');
    return { modLoader: 'fml1', mods: list.mods, modsTruncated: list.truncated };
  }
  if (neoforge) return { modLoader: 'neoforge', mods: null, modsTruncated: false };
  return null;
}
