/**
 * PostgreSQL DDL of the upload store's persistence mode (docs/files.md, "Resumable uploads"): the
 * counterpart of src/store/sqlite/upload-sql.ts. `_uploadStore` (version marker and budgets),
 * `_uploadSessions` (metadata) and `_uploadPayloads` (payload pages), created only when the
 * persistence mode opens a database that has none of them (they are not part of bootstrap.ts). Same
 * columns, PostgreSQL types: text, bigint for SQLite's INTEGER (lengths, offsets, epoch-ms times;
 * read back as BigInt, as SQLite's INTEGER is), bytea for the BLOB pages. Their statements are shared with
 * SQLite: src/store/shared/upload-sql.ts (UploadSql, with UPLOAD_DIALECTS.postgres and this DDL).
 * The server refuses the persistence mode on this backend (src/server.ts).
 */

/** The store's three tables (run by UploadSql.createSteps). */
export const UPLOAD_DDL: readonly string[] = [
  'CREATE TABLE "_uploadStore" ("key" text PRIMARY KEY, "value" text NOT NULL)',
  `CREATE TABLE "_uploadSessions" ("id" text PRIMARY KEY, "principalCollection" text NOT NULL, "principalId" text NOT NULL,
    "collectionId" text NOT NULL, "recordId" text NOT NULL, "fieldId" text NOT NULL, "filename" text NOT NULL, "mimetype" text NOT NULL,
    "length" bigint NOT NULL, "offset" bigint NOT NULL, "created" bigint NOT NULL, "expires" bigint NOT NULL, "state" text NOT NULL)`,
  'CREATE TABLE "_uploadPayloads" ("session" text NOT NULL, "page" integer NOT NULL, "data" bytea NOT NULL, PRIMARY KEY ("session", "page"))',
];
