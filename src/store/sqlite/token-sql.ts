/**
 * SQLite DDL of single-use verification and reset tokens: the `_authTokens` table. Its statements
 * are shared with PostgreSQL: src/store/shared/token-sql.ts (TokenSql, with TOKEN_TIE_BREAK.sqlite).
 */

/** `_authTokens` DDL (part of the bootstrap steps, src/store/sqlite/bootstrap.ts). */
export const AUTH_TOKENS_DDL = [
  `CREATE TABLE IF NOT EXISTS "_authTokens" (
    "id" TEXT PRIMARY KEY NOT NULL, "hash" TEXT NOT NULL, "kind" TEXT NOT NULL, "collectionId" TEXT NOT NULL,
    "recordId" TEXT NOT NULL, "email" TEXT NOT NULL, "created" TEXT NOT NULL, "expires" INTEGER NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS "_authTokens_record" ON "_authTokens" ("collectionId", "recordId", "kind")`,
  // every issue deletes the expired rows first: without this index that is a scan of the table
  // (measured: issuing slowed sharply as outstanding tokens grew; bench/README.md, "Sign-in
  // methods")
  `CREATE INDEX IF NOT EXISTS "_authTokens_expires" ON "_authTokens" ("expires")`,
];
