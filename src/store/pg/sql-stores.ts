/**
 * The PostgreSQL implementations of the store interfaces (docs/deployment.md), bound to one
 * PgReader: the counterpart of src/store/sqlite/sql-stores.ts, so a Store over PostgreSQL hands out
 * the same `store.sql.*` operations (src/store/store.ts, StoreSql). Reads run on `reader`; writes
 * come back as write-job steps for a PgWriter. The auth, session, token, link, second-factor,
 * settings, mail and upload stores are shared with SQLite (src/store/shared/), each given
 * PostgreSQL's spelling (the `postgres` entry of its dialect table; the upload store also this
 * backend's DDL).
 */
import type { StoreSql } from '../store.js';
import type { PgReader } from './reader.js';
import { pgKeyset, pgList } from './list-dialect.js';
import * as json from './record-json.js';
import type { PgDdlOptions } from './collection-sql.js';
import { AuthSql, AUTH_DIALECTS } from '../shared/auth-sql.js';
import { SessionSql, SESSION_TIE_BREAK } from '../shared/session-sql.js';
import { TokenSql, TOKEN_TIE_BREAK } from '../shared/token-sql.js';
import { ExternalAuthSql, PasskeySql, LINK_DIALECTS } from '../shared/link-sql.js';
import { MFA_ACCOUNT_LOCK, MfaSql, TOTP_ORDER } from '../shared/mfa-sql.js';
import { SettingsSql, SETTINGS_DIALECTS } from '../shared/settings-sql.js';
import { MailSql, MAIL_DIALECTS } from '../shared/mail-sql.js';
import { UploadSql, UPLOAD_DIALECTS } from '../shared/upload-sql.js';
import { UPLOAD_DDL } from './upload-sql.js';
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
    auth: new AuthSql(reader, AUTH_DIALECTS.postgres),
    sessions: new SessionSql(reader, SESSION_TIE_BREAK.postgres),
    authTokens: new TokenSql(reader, TOKEN_TIE_BREAK.postgres),
    externalAuths: new ExternalAuthSql(reader, LINK_DIALECTS.postgres),
    passkeys: new PasskeySql(reader, LINK_DIALECTS.postgres),
    mfa: new MfaSql(reader, TOTP_ORDER.postgres, MFA_ACCOUNT_LOCK.postgres),
    settings: new SettingsSql(reader, SETTINGS_DIALECTS.postgres),
    mail: new MailSql(reader, MAIL_DIALECTS.postgres),
    uploads: new UploadSql(reader, UPLOAD_DIALECTS.postgres, UPLOAD_DDL),
    files: new PgFileSql(reader),
    schema: new PgSchemaSql(reader, ddl),
    dialect: pgDialect,
    records: pgRecordSql,
    list: pgList,
    keyset: pgKeyset,
    json,
    sharedLimiter: new PgRateLimiter(reader),
  };
}
