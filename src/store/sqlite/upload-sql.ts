/**
 * SQLite DDL of the upload store's persistence mode: `_uploadStore` (version marker and
 * budgets), `_uploadSessions` (metadata) and `_uploadPayloads` (payload pages). Not part of the
 * bootstrap: the tables are created only when the persistence mode opens a database that has
 * none of them. Their statements are shared with PostgreSQL: src/store/shared/upload-sql.ts
 * (UploadSql, with UPLOAD_DIALECTS.sqlite and this DDL).
 */

/** The store's three tables (run by UploadSql.createSteps). */
export const UPLOAD_DDL: readonly string[] = [
  'CREATE TABLE "_uploadStore" ("key" TEXT PRIMARY KEY NOT NULL, "value" TEXT NOT NULL)',
  `CREATE TABLE "_uploadSessions" ("id" TEXT PRIMARY KEY NOT NULL, "principalCollection" TEXT NOT NULL, "principalId" TEXT NOT NULL,
    "collectionId" TEXT NOT NULL, "recordId" TEXT NOT NULL, "fieldId" TEXT NOT NULL, "filename" TEXT NOT NULL, "mimetype" TEXT NOT NULL,
    "length" INTEGER NOT NULL, "offset" INTEGER NOT NULL, "created" INTEGER NOT NULL, "expires" INTEGER NOT NULL, "state" TEXT NOT NULL)`,
  'CREATE TABLE "_uploadPayloads" ("session" TEXT NOT NULL, "page" INTEGER NOT NULL, "data" BLOB NOT NULL, PRIMARY KEY ("session", "page"))',
];
