/**
 * A check as both databases store it: counts clamped to 32-bit integers (hostile servers
 * report anything), players only for online checks, the version cut to 256 characters.
 */
import { playersScore } from './ranking.js';
import type { CheckRecord } from './types.js';

const MAX_INT32 = 2_147_483_647;

function clampCount(value: number | null | undefined): number {
  if (value === null || value === undefined || !Number.isFinite(value)) return 0;
  return Math.min(MAX_INT32, Math.max(0, Math.floor(value)));
}

export interface CheckRow {
  serverId: string;
  edition: string;
  host: string;
  port: number;
  checkedAt: number;
  /** 0 or 1. */
  online: number;
  /** For the server row: 0 when offline. */
  players: number;
  playersMax: number;
  /** The players term of the trend score (ranking.ts). */
  playersPart: number;
  /** For the checks row: null when offline or not reported. */
  checkPlayers: number | null;
  checkPlayersMax: number | null;
  latencyMs: number | null;
  version: string | null;
}

export function checkRow(check: CheckRecord): CheckRow {
  const players = check.online ? clampCount(check.playersOnline) : 0;
  const playersMax = check.online ? clampCount(check.playersMax) : 0;
  return {
    serverId: check.serverId,
    edition: check.edition,
    host: check.host,
    port: check.port,
    checkedAt: check.checkedAt,
    online: check.online ? 1 : 0,
    players,
    playersMax,
    playersPart: check.online ? playersScore(players) : 0,
    checkPlayers: check.online && check.playersOnline !== null ? players : null,
    checkPlayersMax: check.online && check.playersMax !== null ? playersMax : null,
    latencyMs: check.latencyMs !== null && Number.isFinite(check.latencyMs) ? Math.max(0, check.latencyMs) : null,
    version: check.version === null ? null : check.version.slice(0, 256),
  };
}
