/**
 * Statements of settings and sticky experiment assignments on both backends (implements
 * SettingsRowStore, src/store/settings-store.ts), over the backend-neutral SqlReader
 * (src/store/backend.ts): `_settings` (key → opaque string) and `_assignments` (the variant a
 * subject got in a sticky experiment, kept from its first resolve). The tables themselves are
 * created by each backend's bootstrap: SETTINGS_DDL of src/store/sqlite/settings-sql.ts, SYSTEM_DDL
 * of src/store/pg/bootstrap.ts.
 *
 * Every write step names its row on the change feed (`creates` under SETTINGS_FEED_ID or
 * ASSIGNMENTS_FEED_ID, src/store/change-feed.ts): the entry reaches this process's feed when the
 * job commits and, on PostgreSQL, every other instance's (the cluster feed), and FeatureService
 * refreshes from it (docs/framework.md, "Flags and experiments").
 *
 * What the backends spell differently is in {@link SettingsSqlDialect}; none of it is visible to
 * the domain. One difference is not in the statements: PostgreSQL text cannot hold U+0000, so a
 * setting value holding one is refused by the server (the write job fails) where SQLite stores it.
 */
import type { WriteStep } from '../write-job.js';
import { ASSIGNMENTS_FEED_ID, EVERY_ROW, SETTINGS_FEED_ID } from '../change-feed.js';
import type { SettingsRowStore } from '../settings-store.js';
import type { Setting } from '../../model/setting.js';
import type { BackendKind, SqlReader } from '../backend.js';

/** What the settings statements spell differently per backend. */
export interface SettingsSqlDialect {
  /**
   * The ORDER BY of `all()`: byte order of the UTF-8 key, SQLite's BINARY collation (its
   * default); on PostgreSQL `COLLATE "C"`, whatever the database's default collation is.
   */
  readonly keyOrder: string;
  /**
   * The insert of an assignment that keeps a stored one (the first resolve wins): SQLite's
   * `INSERT OR IGNORE`; on PostgreSQL `ON CONFLICT ("experiment","subject") DO NOTHING`, on the
   * table's primary key. Parameters: experiment, subject, variant, created.
   */
  readonly assignInsert: string;
}

/**
 * A row's id on the change feed: the text with any lone surrogate replaced (U+FFFD). The cluster
 * feed casts its entries to jsonb, which refuses an escaped lone surrogate, and the group commit
 * holding it would fail; neither backend stores one either (both keep text as UTF-8).
 */
const feedId = (text: string): string => (text as unknown as { toWellFormed(): string }).toWellFormed();

/** Each backend's spelling. */
export const SETTINGS_DIALECTS: Readonly<Record<BackendKind, SettingsSqlDialect>> = {
  sqlite: {
    keyOrder: '"key"',
    assignInsert: 'INSERT OR IGNORE INTO "_assignments" ("experiment","subject","variant","created") VALUES ($1,$2,$3,$4)',
  },
  postgres: {
    keyOrder: '"key" COLLATE "C"',
    assignInsert: 'INSERT INTO "_assignments" ("experiment","subject","variant","created") VALUES ($1,$2,$3,$4) ON CONFLICT ("experiment","subject") DO NOTHING',
  },
};

/**
 * The settings store over one backend's reader; `dialect`: that backend's entry of
 * {@link SETTINGS_DIALECTS}.
 */
export class SettingsSql implements SettingsRowStore {
  constructor(private reader: SqlReader, private dialect: SettingsSqlDialect) {}

  async all(): Promise<Setting[]> {
    return (await this.reader.all(`SELECT "key","value","created","updated" FROM "_settings" ORDER BY ${this.dialect.keyOrder}`, []))
      .map((r) => ({ key: String(r[0]), value: String(r[1]), created: String(r[2]), updated: String(r[3]) }));
  }

  async get(key: string): Promise<Setting | undefined> {
    const r = await this.reader.get('SELECT "key","value","created","updated" FROM "_settings" WHERE "key" = $1', [key]);
    return r ? { key: String(r[0]), value: String(r[1]), created: String(r[2]), updated: String(r[3]) } : undefined;
  }

  putStep(key: string, value: string, now: string): WriteStep {
    return {
      sql: 'INSERT INTO "_settings" ("key","value","created","updated") VALUES ($1,$2,$3,$4) ON CONFLICT ("key") DO UPDATE SET "value" = excluded."value", "updated" = excluded."updated"',
      params: [key, value, now, now],
      creates: { collection: SETTINGS_FEED_ID, id: feedId(key) },
    };
  }

  deleteStep(key: string, fail: NonNullable<WriteStep['fail']>): WriteStep {
    return { sql: 'DELETE FROM "_settings" WHERE "key" = $1', params: [key], expect: 'change', fail, creates: { collection: SETTINGS_FEED_ID, id: feedId(key) } };
  }

  changedAllSteps(): WriteStep[] {
    return [
      { sql: 'DELETE FROM "_settings" WHERE 0 = 1', params: [], creates: { collection: SETTINGS_FEED_ID, id: EVERY_ROW } },
      { sql: 'DELETE FROM "_assignments" WHERE 0 = 1', params: [], creates: { collection: ASSIGNMENTS_FEED_ID, id: EVERY_ROW } },
    ];
  }

  async assignment(experiment: string, subject: string): Promise<string | undefined> {
    const r = await this.reader.get('SELECT "variant" FROM "_assignments" WHERE "experiment" = $1 AND "subject" = $2', [experiment, subject]);
    return r ? String(r[0]) : undefined;
  }

  assignStep(experiment: string, subject: string, variant: string, now: string): WriteStep {
    // the first resolve wins: a concurrent one keeps the stored variant
    return { sql: this.dialect.assignInsert, params: [experiment, subject, variant, now], creates: { collection: ASSIGNMENTS_FEED_ID, id: feedId(JSON.stringify([experiment, subject])) } };
  }
}
