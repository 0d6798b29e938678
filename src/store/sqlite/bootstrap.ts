/**
 * The system tables every data directory has, created idempotently at startup (and by the CLI
 * before it touches the database): `_collections` (the schema registry), `_superusers` (the
 * built-in auth collection), `_externalAuths` (OAuth2 links), `_passkeys` (WebAuthn credentials) and `_cursorStates` (stateful cursors).
 */
import type { WriteStep } from '../write-job.js';
import type { Collection } from '../../model/schema.js';
import { authSystemFields, defaultAuthOptions } from '../../model/auth-schema.js';
import { SESSIONS_DDL } from './session-sql.js';
import { AUTH_TOKENS_DDL } from './token-sql.js';
import { LINK_DDL } from './link-sql.js';
import { MFA_DDL } from './mfa-sql.js';
import { SETTINGS_DDL } from './settings-sql.js';
import { MAIL_DDL } from './mail-sql.js';

export const SUPERUSERS_ID = 'pbc_superusers0';

const now = () => new Date().toISOString().replace('T', ' ');

/** The `_superusers` collection as stored in `_collections`. */
export function superusersCollection(): Collection {
  const t = now();
  return {
    id: SUPERUSERS_ID,
    name: '_superusers',
    type: 'auth',
    system: true,
    fields: authSystemFields(),
    indexes: [],
    options: { ttl_field: null, auth: defaultAuthOptions() },
    listRule: null,
    viewRule: null,
    createRule: null,
    updateRule: null,
    deleteRule: null,
    created: t,
    updated: t,
  };
}

/** Idempotent steps that create the system tables and the `_superusers` collection row. */
export function bootstrapSteps(): WriteStep[] {
  const su = superusersCollection();
  return [
    {
      sql: `CREATE TABLE IF NOT EXISTS "_collections" (
        "id" TEXT PRIMARY KEY NOT NULL, "name" TEXT NOT NULL UNIQUE COLLATE NOCASE, "type" TEXT NOT NULL,
        "system" INTEGER NOT NULL DEFAULT 0, "fields" TEXT NOT NULL, "indexes" TEXT NOT NULL, "options" TEXT NOT NULL,
        "listRule" TEXT, "viewRule" TEXT, "createRule" TEXT, "updateRule" TEXT, "deleteRule" TEXT,
        "created" TEXT NOT NULL, "updated" TEXT NOT NULL)`,
      params: [],
    },
    {
      sql: `CREATE TABLE IF NOT EXISTS "_superusers" (
        "id" TEXT PRIMARY KEY NOT NULL, "created" TEXT NOT NULL, "updated" TEXT NOT NULL,
        "email" TEXT NOT NULL, "emailVisibility" INTEGER NOT NULL DEFAULT 0, "verified" INTEGER NOT NULL DEFAULT 0,
        "passwordHash" TEXT, "tokenKey" TEXT NOT NULL, "token_epoch" INTEGER NOT NULL DEFAULT 0)`,
      params: [],
    },
    { sql: `CREATE UNIQUE INDEX IF NOT EXISTS "_superusers_email" ON "_superusers" ("email" COLLATE NOCASE)`, params: [] },
    {
      sql: `INSERT OR IGNORE INTO "_collections" ("id","name","type","system","fields","indexes","options","created","updated")
            VALUES (?,?,?,1,?,?,?,?,?)`,
      params: [su.id, su.name, su.type, JSON.stringify(su.fields), '[]', JSON.stringify(su.options), su.created, su.updated],
    },
    // session rows (table store), single-use tokens, OAuth2 links, passkeys, second factors, settings
    ...[...SESSIONS_DDL, ...AUTH_TOKENS_DDL, ...LINK_DDL, ...MFA_DDL, ...SETTINGS_DDL, ...MAIL_DDL].map((sql) => ({ sql, params: [] })),
    // stateful list cursors (SERVICE_CURSOR_TOKEN=stateful): payload until `expires` (epoch ms)
    { sql: `CREATE TABLE IF NOT EXISTS "_cursorStates" ("id" TEXT PRIMARY KEY NOT NULL, "payload" TEXT NOT NULL, "expires" INTEGER NOT NULL)`, params: [] },
    { sql: `CREATE INDEX IF NOT EXISTS "_cursorStates_expires" ON "_cursorStates" ("expires")`, params: [] },
  ];
}
