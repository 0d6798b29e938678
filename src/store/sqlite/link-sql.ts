/**
 * SQLite DDL of the two sign-in link tables: `_externalAuths` (OAuth2 provider links) and
 * `_passkeys` (WebAuthn credentials): docs/auth.md, "OAuth2 and passkeys". Their statements are
 * shared with PostgreSQL: src/store/shared/link-sql.ts (ExternalAuthSql and PasskeySql, with
 * LINK_DIALECTS.sqlite).
 */

/**
 * `_externalAuths` and `_passkeys` DDL (part of the bootstrap steps, src/store/sqlite/bootstrap.ts).
 * `_externalAuths."confirmed"`: 1 when the link was made under a proven email address, 0 when not
 * (see ExternalAuthRowStore.linkStep); a database made before the column gets it from
 * {@link linkUpgradeSteps}, its existing links then 0.
 */
export const LINK_DDL = [
  `CREATE TABLE IF NOT EXISTS "_externalAuths" (
    "id" TEXT PRIMARY KEY NOT NULL, "collectionId" TEXT NOT NULL, "recordId" TEXT NOT NULL,
    "provider" TEXT NOT NULL, "providerId" TEXT NOT NULL, "created" TEXT NOT NULL,
    "confirmed" INTEGER NOT NULL DEFAULT 0,
    UNIQUE ("collectionId", "provider", "providerId"))`,
  `CREATE INDEX IF NOT EXISTS "_externalAuths_record" ON "_externalAuths" ("collectionId", "recordId")`,
  // credentialId: base64url of the raw credential id; publicKey: base64url COSE key; counter: the
  // authenticator's signature counter (0 when it keeps none); transports: JSON array
  `CREATE TABLE IF NOT EXISTS "_passkeys" (
    "id" TEXT PRIMARY KEY NOT NULL, "collectionId" TEXT NOT NULL, "recordId" TEXT NOT NULL,
    "publicKey" TEXT NOT NULL, "counter" INTEGER NOT NULL DEFAULT 0, "transports" TEXT NOT NULL DEFAULT '[]',
    "factor" INTEGER NOT NULL DEFAULT 0, "created" TEXT NOT NULL, "lastUsed" TEXT)`,
  `CREATE INDEX IF NOT EXISTS "_passkeys_record" ON "_passkeys" ("collectionId", "recordId")`,
];

/** Reads whether `table` has `column` (e.g. through `pragma_table_info`). */
export type HasColumn = (table: string, column: string) => boolean;

/**
 * The statements that bring the link tables of a database made by an older version up to LINK_DDL
 * (SQLite has no ADD COLUMN IF NOT EXISTS, so what is missing is read first): `_externalAuths`
 * gains `"confirmed"`, every existing link 0, since nothing recorded whether its address was
 * proven (docs/operations.md, "Upgrades"). Empty when the database is current.
 */
export function linkUpgradeSteps(has: HasColumn): string[] {
  return has('_externalAuths', 'confirmed') ? [] : ['ALTER TABLE "_externalAuths" ADD COLUMN "confirmed" INTEGER NOT NULL DEFAULT 0'];
}
