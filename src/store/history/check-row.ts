/**
 * A check as both databases store it: counts clamped to 32-bit integers (hostile servers
 * report anything), players only for online checks, latency in whole milliseconds, and the
 * hour (since the epoch) whose rollup row it adds to.
 */
import { playersScore } from './ranking.js';
import type { CheckRecord } from '../types.js';

const MAX_INT32 = 2_147_483_647;
export const HOUR_MS = 3_600_000;

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
  hour: number;
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
    latencyMs: check.latencyMs !== null && Number.isFinite(check.latencyMs) ? Math.min(MAX_INT32, Math.max(0, Math.round(check.latencyMs))) : null,
    hour: Math.floor(check.checkedAt / HOUR_MS),
  };
}

/** The columns of an hourly (or four-hour) rollup row, in the order rollupSelect gives them. */
export const ROLLUP_COLUMNS = 'server, hour, checks, online, players_n, players_sum, players_peak';

/** The hourly rows of the checks in `source` (a table or subquery of the new layout, or a CTE). */
export function rollupSelect(source: string): string {
  return `SELECT server, CAST(checked_at / ${HOUR_MS} AS INTEGER) AS hour, count(*), sum(online),
      sum(CASE WHEN online = 1 AND players_online IS NOT NULL THEN 1 ELSE 0 END),
      coalesce(sum(CASE WHEN online = 1 THEN players_online END), 0),
      max(CASE WHEN online = 1 THEN players_online END)
    FROM ${source} GROUP BY 1, 2`;
}
