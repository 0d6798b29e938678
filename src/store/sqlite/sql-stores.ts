/** The SQLite implementations of the store interfaces, bound to one main-thread reader. */
import type { StoreSql } from '../store.js';
import type { Reader } from './reader.js';
import * as list from './list-sql.js';
import * as keyset from './keyset.js';
import * as json from './record-json.js';
import { SqliteAuthSql } from './auth-sql.js';
import { SqliteSessionSql } from './session-sql.js';
import { SqliteTokenSql } from './token-sql.js';
import { SqliteExternalAuthSql, SqlitePasskeySql } from './link-sql.js';
import { SqliteMfaSql } from './mfa-sql.js';
import { SqliteSettingsSql } from './settings-sql.js';
import { SqliteMailSql } from './mail-sql.js';
import { SqliteUploadSql } from './upload-sql.js';
import { SqliteFileSql } from './file-sql.js';
import { SqliteSchemaSql } from './schema-sql.js';
import { sqliteDialect } from './dialect.js';
import { sqliteRecordSql } from './record-sql.js';

/** Every SQLite store over `reader` (reads run on it; writes come back as write-job steps). */
export function sqliteStores(reader: Reader): StoreSql {
  return {
    kind: 'sqlite',
    auth: new SqliteAuthSql(reader),
    sessions: new SqliteSessionSql(reader),
    authTokens: new SqliteTokenSql(reader),
    externalAuths: new SqliteExternalAuthSql(reader),
    passkeys: new SqlitePasskeySql(reader),
    mfa: new SqliteMfaSql(reader),
    settings: new SqliteSettingsSql(reader),
    mail: new SqliteMailSql(reader),
    uploads: new SqliteUploadSql(reader),
    files: new SqliteFileSql(reader),
    schema: new SqliteSchemaSql(reader),
    dialect: sqliteDialect,
    records: sqliteRecordSql,
    list,
    keyset,
    json,
  };
}
