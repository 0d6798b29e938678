/**
 * SQLite statements of settings and sticky experiment assignments (implements SettingsRowStore,
 * src/store/settings-store.ts): `_settings` (key → opaque string) and `_assignments` (the variant
 * a subject got in a sticky experiment, kept from its first resolve).
 */
import type { WriteStep } from '../write-job.js';
import type { SettingsRowStore } from '../settings-store.js';
import type { Setting } from '../../settings/setting.js';
import type { Reader } from './reader.js';

export const SETTINGS_DDL = [
  `CREATE TABLE IF NOT EXISTS "_settings" ("key" TEXT PRIMARY KEY NOT NULL, "value" TEXT NOT NULL, "created" TEXT NOT NULL, "updated" TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS "_assignments" ("experiment" TEXT NOT NULL, "subject" TEXT NOT NULL, "variant" TEXT NOT NULL, "created" TEXT NOT NULL, PRIMARY KEY ("experiment", "subject"))`,
];

export class SqliteSettingsSql implements SettingsRowStore {
  constructor(private reader: Reader) {}

  all(): Setting[] {
    return this.reader.all('SELECT "key","value","created","updated" FROM "_settings" ORDER BY "key"', [])
      .map((r) => ({ key: String(r[0]), value: String(r[1]), created: String(r[2]), updated: String(r[3]) }));
  }

  putStep(key: string, value: string, now: string): WriteStep {
    return {
      sql: 'INSERT INTO "_settings" ("key","value","created","updated") VALUES (?,?,?,?) ON CONFLICT ("key") DO UPDATE SET "value" = excluded."value", "updated" = excluded."updated"',
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
    return { sql: 'INSERT OR IGNORE INTO "_assignments" ("experiment","subject","variant","created") VALUES (?,?,?,?)', params: [experiment, subject, variant, now] };
  }
}
