/**
 * The trend score (docs/api.md, "Trends"):
 *
 *   trend_score = distinct_clients_24h + players_online / (players_online + 1000)
 *
 * The players term is below 1, so one more distinct client always outranks any number of
 * players, and players only order servers with as many clients. A client is a keyed hash of
 * its address (IPv6 by /48, so one subscriber's many /64s are one client), counted once per
 * server however often it asks.
 *
 * The store keeps the score as an integer, `SCORE_SCALE` times the formula with the players
 * term rounded down, so that both databases compare it exactly (the keyset cursor compares
 * for equality); the API shows it divided back, i.e. with at most 6 decimals.
 */
export const SCORE_SCALE = 1_000_000;
/** Player counts above this are treated as this many (hostile servers report anything). */
const MAX_PLAYERS = 10_000_000;

export function playersScore(playersOnline: number | null): number {
  const p = Math.min(MAX_PLAYERS, Math.max(0, Math.floor(playersOnline ?? 0)));
  return Math.floor((SCORE_SCALE * p) / (p + 1000));
}

export function scoreValue(storedScore: number): number {
  return storedScore / SCORE_SCALE;
}

/** Text for the OpenAPI description of /trends. */
export const TREND_SCORE_FORMULA =
  '`trend_score = distinct_clients_24h + players_online / (players_online + 1000)`, rounded down to ' +
  '6 decimals: `distinct_clients_24h` counts the different clients (a keyed hash of the address, ' +
  'IPv6 by /48, never the address itself) that looked the server up in the last 24 hours, so a ' +
  'single client, even one holding a whole IPv6 /48, cannot raise it; the players term is below 1, so it only breaks ties between ' +
  'servers with as many clients.';
