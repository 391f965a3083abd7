import { BadRequestError, ObserverError } from '../core/errors.js';

/** 400: the trends cursor names a server the store does not know (any more). */
export class InvalidCursorError extends BadRequestError {
  constructor() {
    super(
      'invalid_cursor',
      'The cursor does not name a known server. Start again without a cursor.',
    );
  }
}

/**
 * The database cannot be used as Observer's history: the file is not an SQLite database, or
 * the schema was written by a newer Observer. Start-up stops with this one line; the
 * database is left as it was.
 */
export class StoreOpenError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreOpenError';
  }
}

/** 503 `migrating`: a schema migration runs; stored data is served again once it is done. */
export class MigratingError extends ObserverError {
  constructor() {
    super('migrating', 503, 'The history database is being upgraded. Please retry shortly.', { headers: { 'Retry-After': '10' } });
  }
}
