/**
 * The PostgreSQL implementations of the store interfaces (issue 24), bound to one PgReader: the
 * counterpart of src/store/sqlite/sql-stores.ts, so a Store over PostgreSQL hands out the same
 * `store.sql.*` operations (src/store/store.ts, StoreSql). Reads run on `reader`; writes come back
 * as write-job steps for a PgWriter.
 */
import type { StoreSql } from '../store.js';
import type { PgReader } from './reader.js';
import * as list from './list-sql.js';
import * as keyset from './keyset.js';
import * as json from './record-json.js';
import type { PgDdlOptions } from './collection-sql.js';
import { PgAuthSql } from './auth-sql.js';
import { PgSessionSql } from './session-sql.js';
import { PgTokenSql } from './token-sql.js';
import { PgExternalAuthSql, PgPasskeySql } from './link-sql.js';
import { PgMfaSql } from './mfa-sql.js';
import { PgSettingsSql } from './settings-sql.js';
import { PgMailSql } from './mail-sql.js';
import { PgUploadSql } from './upload-sql.js';
import { PgFileSql } from './file-sql.js';
import { PgSchemaSql } from './schema-sql.js';
import { pgDialect } from './dialect.js';
import { pgRecordSql } from './record-sql.js';
import { PgRateLimiter } from './rate-limit-sql.js';

/**
 * Every PostgreSQL store over `reader`. `ddl.vector`: whether the pgvector extension is installed
 * (bootstrap.ts, ensureVectorExtension), which decides the vector columns of record tables.
 */
export function pgStores(reader: PgReader, ddl: PgDdlOptions = { vector: false }): StoreSql {
  return {
    kind: 'postgres',
    auth: new PgAuthSql(reader),
    sessions: new PgSessionSql(reader),
    authTokens: new PgTokenSql(reader),
    externalAuths: new PgExternalAuthSql(reader),
    passkeys: new PgPasskeySql(reader),
    mfa: new PgMfaSql(reader),
    settings: new PgSettingsSql(reader),
    mail: new PgMailSql(reader),
    uploads: new PgUploadSql(reader),
    files: new PgFileSql(reader),
    schema: new PgSchemaSql(reader, ddl),
    dialect: pgDialect,
    records: pgRecordSql,
    list,
    keyset,
    json,
    sharedLimiter: new PgRateLimiter(reader),
  };
}
