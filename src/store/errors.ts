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
