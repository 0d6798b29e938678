/**
 * SQLite DDL of settings and sticky experiment assignments: `_settings` (key → opaque string) and
 * `_assignments` (the variant a subject got in a sticky experiment, kept from its first resolve).
 * Their statements are shared with PostgreSQL: src/store/shared/settings-sql.ts (SettingsSql, with
 * SETTINGS_DIALECTS.sqlite).
 */

/** `_settings` and `_assignments` DDL (part of the bootstrap steps, src/store/sqlite/bootstrap.ts). */
export const SETTINGS_DDL = [
  `CREATE TABLE IF NOT EXISTS "_settings" ("key" TEXT PRIMARY KEY NOT NULL, "value" TEXT NOT NULL, "created" TEXT NOT NULL, "updated" TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS "_assignments" ("experiment" TEXT NOT NULL, "subject" TEXT NOT NULL, "variant" TEXT NOT NULL, "created" TEXT NOT NULL, PRIMARY KEY ("experiment", "subject"))`,
];
