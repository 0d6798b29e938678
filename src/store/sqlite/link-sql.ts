/**
 * SQLite DDL of the two sign-in link tables: `_externalAuths` (OAuth2 provider links, spec
 * 1-core-api.md "OAuth2") and `_passkeys` (WebAuthn credentials, "Passkey registration"). Their
 * statements are shared with PostgreSQL: src/store/shared/link-sql.ts (ExternalAuthSql and
 * PasskeySql, with LINK_DIALECTS.sqlite).
 */

/** `_externalAuths` and `_passkeys` DDL (part of the bootstrap steps, src/store/sqlite/bootstrap.ts). */
export const LINK_DDL = [
  `CREATE TABLE IF NOT EXISTS "_externalAuths" (
    "id" TEXT PRIMARY KEY NOT NULL, "collectionId" TEXT NOT NULL, "recordId" TEXT NOT NULL,
    "provider" TEXT NOT NULL, "providerId" TEXT NOT NULL, "created" TEXT NOT NULL,
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
