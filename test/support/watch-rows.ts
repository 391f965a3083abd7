/** Watch rows to insert straight into the store, for tests of the store and the watch loop. */
import { NEW_WATCH_STATE, type WatchRow } from '../../src/store/index.js';

export function watchRow(id: string, overrides: Partial<WatchRow> = {}): WatchRow {
  return {
    id,
    token_hash: 'h',
    verify_token: 't',
    address: 'mc.observer.test',
    host: 'mc.observer.test',
    edition: 'java',
    webhook_kind: 'json',
    webhook_url: 'http://127.0.0.1:1/',
    players_at_least: null,
    public_url: 'http://127.0.0.1',
    client_hash: 'c',
    server_key: 'mc.observer.test',
    txt_name: '_observer.mc.observer.test',
    created_at: 0,
    expires_at: 1_000,
    next_check_at: 100,
    ...NEW_WATCH_STATE,
    ...overrides,
  };
}
