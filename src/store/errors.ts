import { BadRequestError } from '../core/errors.js';

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
