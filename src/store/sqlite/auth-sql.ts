/**
 * SQLite DDL of auth records: the hidden auth columns appended to auth tables. The statements of
 * auth records are shared with PostgreSQL: src/store/shared/auth-sql.ts (AuthSql, with
 * AUTH_DIALECTS.sqlite), which also has the side-table deletes re-exported here for the collection
 * drop (src/store/sqlite/collection-sql.ts).
 */

export { recordSideRowsDeleteSteps, collectionSideRowsDeleteSteps } from '../shared/auth-sql.js';

/** Column definitions of the hidden auth columns, appended to auth tables. */
export const AUTH_HIDDEN_COLUMNS_SQL = `"passwordHash" TEXT, "tokenKey" TEXT NOT NULL DEFAULT '', "token_epoch" INTEGER NOT NULL DEFAULT 0`;
