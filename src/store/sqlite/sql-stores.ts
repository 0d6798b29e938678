/**
 * The SQLite implementations of the store interfaces, bound to one main-thread reader. The auth,
 * session, token, link, second-factor, settings, mail and upload stores are shared with
 * PostgreSQL (src/store/shared/), each given SQLite's spelling (the `sqlite` entry of its dialect
 * table; the upload store also this backend's DDL).
 */
import type { StoreSql } from '../store.js';
import type { Reader } from './reader.js';
import { sqliteKeyset, sqliteList } from './list-dialect.js';
import * as json from './record-json.js';
import { AuthSql, AUTH_DIALECTS } from '../shared/auth-sql.js';
import { SessionSql, SESSION_TIE_BREAK } from '../shared/session-sql.js';
import { TokenSql, TOKEN_TIE_BREAK } from '../shared/token-sql.js';
import { ExternalAuthSql, PasskeySql, LINK_DIALECTS } from '../shared/link-sql.js';
import { MfaSql, TOTP_ORDER } from '../shared/mfa-sql.js';
import { SettingsSql, SETTINGS_DIALECTS } from '../shared/settings-sql.js';
import { MailSql, MAIL_DIALECTS } from '../shared/mail-sql.js';
import { UploadSql, UPLOAD_DIALECTS } from '../shared/upload-sql.js';
import { UPLOAD_DDL } from './upload-sql.js';
import { SqliteFileSql } from './file-sql.js';
import { SqliteSchemaSql } from './schema-sql.js';
import { sqliteDialect } from './dialect.js';
import { sqliteRecordSql } from './record-sql.js';
import { setFullTextEnabled, staleFullTextIndexes } from './collection-sql.js';

/** Every SQLite store over `reader` (reads run on it; writes come back as write-job steps). */
export function sqliteStores(reader: Reader): StoreSql {
  return {
    kind: 'sqlite',
    auth: new AuthSql(reader, AUTH_DIALECTS.sqlite),
    sessions: new SessionSql(reader, SESSION_TIE_BREAK.sqlite),
    authTokens: new TokenSql(reader, TOKEN_TIE_BREAK.sqlite),
    externalAuths: new ExternalAuthSql(reader, LINK_DIALECTS.sqlite),
    passkeys: new PasskeySql(reader, LINK_DIALECTS.sqlite),
    mfa: new MfaSql(reader, TOTP_ORDER.sqlite),
    settings: new SettingsSql(reader, SETTINGS_DIALECTS.sqlite),
    mail: new MailSql(reader, MAIL_DIALECTS.sqlite),
    uploads: new UploadSql(reader, UPLOAD_DIALECTS.sqlite, UPLOAD_DDL),
    files: new SqliteFileSql(reader),
    schema: new SqliteSchemaSql(reader),
    dialect: sqliteDialect,
    records: sqliteRecordSql,
    list: sqliteList,
    keyset: sqliteKeyset,
    json,
    fullText: { enable: setFullTextEnabled, staleIndexes: (searchable) => staleFullTextIndexes(reader, searchable) },
  };
}
