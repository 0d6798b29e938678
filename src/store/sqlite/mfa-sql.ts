/**
 * SQLite DDL of second factors (docs/auth.md, "Two-factor sign-in"; docs/api.md, "Two-factor"):
 * `_totpFactors` (TOTP seeds, encrypted, with the last accepted time step), `_recoveryCodes`
 * (hashed, single use), `_mfaAttempts` (pending logins, enrollments and management capabilities
 * with their tries) and `_mfaTries` (the durable per-account limit). Their statements are shared
 * with PostgreSQL: src/store/shared/mfa-sql.ts (MfaSql, with TOTP_ORDER.sqlite).
 */

/** DDL (part of the bootstrap steps, src/store/sqlite/bootstrap.ts). */
export const MFA_DDL = [
  `CREATE TABLE IF NOT EXISTS "_totpFactors" (
    "id" TEXT PRIMARY KEY NOT NULL, "collectionId" TEXT NOT NULL, "recordId" TEXT NOT NULL,
    "secret" TEXT NOT NULL, "lastStep" INTEGER NOT NULL DEFAULT 0, "created" TEXT NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS "_totpFactors_record" ON "_totpFactors" ("collectionId", "recordId")`,
  `CREATE TABLE IF NOT EXISTS "_recoveryCodes" (
    "id" TEXT PRIMARY KEY NOT NULL, "collectionId" TEXT NOT NULL, "recordId" TEXT NOT NULL,
    "hash" TEXT NOT NULL, "created" TEXT NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS "_recoveryCodes_record" ON "_recoveryCodes" ("collectionId", "recordId")`,
  `CREATE TABLE IF NOT EXISTS "_mfaAttempts" (
    "id" TEXT PRIMARY KEY NOT NULL, "hash" TEXT NOT NULL, "collectionId" TEXT NOT NULL, "recordId" TEXT NOT NULL,
    "purpose" TEXT NOT NULL, "tries" INTEGER NOT NULL DEFAULT 0, "data" TEXT NOT NULL DEFAULT '',
    "expires" INTEGER NOT NULL, "created" TEXT NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS "_mfaAttempts_record" ON "_mfaAttempts" ("collectionId", "recordId")`,
  `CREATE INDEX IF NOT EXISTS "_mfaAttempts_expires" ON "_mfaAttempts" ("expires")`,
  `CREATE TABLE IF NOT EXISTS "_mfaTries" ("collectionId" TEXT NOT NULL, "recordId" TEXT NOT NULL, "at" INTEGER NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS "_mfaTries_record" ON "_mfaTries" ("collectionId", "recordId", "at")`,
];
