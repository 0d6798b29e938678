/**
 * PostgreSQL statements of settings and sticky experiment assignments (implements
 * SettingsRowStore, src/store/settings-store.ts; issue 24): the counterpart of
 * src/store/sqlite/settings-sql.ts over the `_settings` and `_assignments` tables of
 * src/store/pg/bootstrap.ts.
 *
 * Differences from SQLite, none visible to the domain:
 * - `INSERT OR IGNORE` (the first assignment wins) is `ON CONFLICT ("experiment","subject") DO
 *   NOTHING`, on the table's primary key.
 * - `all()` orders by `"key" COLLATE "C"`: byte order of the UTF-8 text, SQLite's BINARY
 *   collation, whatever the database's default collation is.
 * - PostgreSQL text cannot hold U+0000: a setting value holding one is refused by the server
 *   (the write job fails) where SQLite stores it.
 */
import type { WriteStep } from '../write-job.js';
import type { SettingsRowStore } from '../settings-store.js';
import type { Setting } from '../../settings/setting.js';
import type { PgReader } from './reader.js';

export class PgSettingsSql implements SettingsRowStore {
  constructor(private reader: PgReader) {}

  all(): Setting[] {
    return this.reader.all('SELECT "key","value","created","updated" FROM "_settings" ORDER BY "key" COLLATE "C"', [])
      .map((r) => ({ key: String(r[0]), value: String(r[1]), created: String(r[2]), updated: String(r[3]) }));
  }

  putStep(key: string, value: string, now: string): WriteStep {
    return {
      sql: 'INSERT INTO "_settings" ("key","value","created","updated") VALUES (?,?,?,?) ON CONFLICT ("key") DO UPDATE SET "value" = EXCLUDED."value", "updated" = EXCLUDED."updated"',
      params: [key, value, now, now],
    };
  }

  deleteStep(key: string, fail: NonNullable<WriteStep['fail']>): WriteStep {
    return { sql: 'DELETE FROM "_settings" WHERE "key" = ?', params: [key], expect: 'change', fail };
  }

  assignment(experiment: string, subject: string): string | undefined {
    const r = this.reader.get('SELECT "variant" FROM "_assignments" WHERE "experiment" = ? AND "subject" = ?', [experiment, subject]);
    return r ? String(r[0]) : undefined;
  }

  assignStep(experiment: string, subject: string, variant: string, now: string): WriteStep {
    // the first resolve wins: a concurrent one keeps the stored variant
    return {
      sql: 'INSERT INTO "_assignments" ("experiment","subject","variant","created") VALUES (?,?,?,?) ON CONFLICT ("experiment","subject") DO NOTHING',
      params: [experiment, subject, variant, now],
    };
  }
}
