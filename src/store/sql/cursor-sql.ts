/**
 * The statements of stateful cursor tokens (`_cursorStates`, src/records/cursor.ts), the same on
 * both backends (PostgreSQL's reader numbers the `?` placeholders).
 */

/** Deletes the states past their expiry; params: now (ms). */
export const DELETE_EXPIRED_CURSORS = 'DELETE FROM "_cursorStates" WHERE "expires" <= $1';
/** Stores one page's boundaries; params: id, payload (JSON), expires (ms). */
export const INSERT_CURSOR = 'INSERT INTO "_cursorStates" ("id", "payload", "expires") VALUES ($1, $2, $3)';
/** One state; params: id. Columns: payload, expires. */
export const SELECT_CURSOR = 'SELECT "payload", "expires" FROM "_cursorStates" WHERE "id" = $1';
