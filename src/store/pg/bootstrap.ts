/**
 * The system tables on PostgreSQL (docs/deployment.md), created idempotently at startup: the
 * counterpart of src/store/sqlite/bootstrap.ts and of the DDL the SQLite stores keep beside their
 * statements (session-sql.ts, token-sql.ts, link-sql.ts, mfa-sql.ts, settings-sql.ts, mail-sql.ts)
 * and migrations-sql.ts. Same tables, columns and indexes, with PostgreSQL types: text for text,
 * bigint for SQLite INTEGER counters and epoch-millisecond times, smallint for 0/1 flags; the JSON
 * columns of `_collections` stay text (the registry is read whole and parsed, and text keeps the
 * stored definition byte for byte). SQLite's `COLLATE NOCASE` keys become unique indexes on
 * `lower(…)` (`_collections.name`, `_superusers.email`, `_suppressions`, `_senders`): statements
 * that look those up compare `lower(col) = lower(?)` and upsert `ON CONFLICT (lower(…), …)`.
 *
 * `_superusers` is a record table of the storage model in collection-sql.ts (with `"_rowid"`),
 * with SQLite's NOT NULL constraints on its auth columns.
 *
 * The `vector` extension cannot be part of these steps: CREATE EXTENSION may be refused (no
 * privilege, or pgvector is not installed: Debian 12 has no package for it), and a failed statement
 * aborts the transaction it runs in. {@link ensureVectorExtension} tries it on its own and answers
 * whether vectors are available, with the warning to log when they are not (docs/deployment.md:
 * without pgvector a warning is logged and vector search is off).
 */
import type { WriteStep } from '../write-job.js';
import { superusersCollection } from '../sqlite/bootstrap.js';
import { FTS_CONFIG, ROWID_COLUMN, UPSERT_REGISTRY, VECTOR_FUNCTION, q, rowidIndexName, uniqueIndexName } from './collection-sql.js';

export { SUPERUSERS_ID, superusersCollection } from '../sqlite/bootstrap.js';

const SU = superusersCollection();

/** The system tables and their indexes, every statement idempotent (IF NOT EXISTS). */
export const SYSTEM_DDL: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS "_collections" (
    "id" text PRIMARY KEY, "name" text NOT NULL, "type" text NOT NULL, "system" smallint NOT NULL DEFAULT 0,
    "fields" text NOT NULL, "indexes" text NOT NULL, "options" text NOT NULL,
    "listRule" text, "viewRule" text, "createRule" text, "updateRule" text, "deleteRule" text,
    "created" text NOT NULL, "updated" text NOT NULL)`,
  `CREATE UNIQUE INDEX IF NOT EXISTS "_collections_name" ON "_collections" (lower("name"))`,
  `CREATE TABLE IF NOT EXISTS "_superusers" (
    "id" text PRIMARY KEY, "created" text NOT NULL, "updated" text NOT NULL, ${q(ROWID_COLUMN)} bigint GENERATED ALWAYS AS IDENTITY,
    "email" text NOT NULL, "emailVisibility" smallint NOT NULL DEFAULT 0, "verified" smallint NOT NULL DEFAULT 0,
    "passwordHash" text, "tokenKey" text NOT NULL, "token_epoch" bigint NOT NULL DEFAULT 0)`,
  // named as collection-sql.ts names them, so a later update of the collection finds them
  `CREATE UNIQUE INDEX IF NOT EXISTS ${q(uniqueIndexName(SU, SU.fields.find((f) => f.name === 'email')!))} ON "_superusers" (lower("email"))`,
  `CREATE UNIQUE INDEX IF NOT EXISTS ${q(rowidIndexName(SU))} ON "_superusers" (${q(ROWID_COLUMN)})`,
  // session rows (table store)
  `CREATE TABLE IF NOT EXISTS "_sessions" (
    "id" text PRIMARY KEY, "collectionId" text NOT NULL, "recordId" text NOT NULL,
    "created" text NOT NULL, "last_seen" text NOT NULL, "user_agent" text NOT NULL DEFAULT '', "ip" text NOT NULL DEFAULT '')`,
  `CREATE INDEX IF NOT EXISTS "_sessions_owner" ON "_sessions" ("collectionId", "recordId", "created")`,
  // single-use tokens; `expires` in epoch ms
  `CREATE TABLE IF NOT EXISTS "_authTokens" (
    "id" text PRIMARY KEY, "hash" text NOT NULL, "kind" text NOT NULL, "collectionId" text NOT NULL,
    "recordId" text NOT NULL, "email" text NOT NULL, "created" text NOT NULL, "expires" bigint NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS "_authTokens_record" ON "_authTokens" ("collectionId", "recordId", "kind")`,
  `CREATE INDEX IF NOT EXISTS "_authTokens_expires" ON "_authTokens" ("expires")`,
  // OAuth2 links and passkeys
  `CREATE TABLE IF NOT EXISTS "_externalAuths" (
    "id" text PRIMARY KEY, "collectionId" text NOT NULL, "recordId" text NOT NULL,
    "provider" text NOT NULL, "providerId" text NOT NULL, "created" text NOT NULL,
    "confirmed" smallint NOT NULL DEFAULT 0,
    UNIQUE ("collectionId", "provider", "providerId"))`,
  // a database made before links recorded whether their address was proven: the column, its
  // existing links 0 (unconfirmed; docs/operations.md, "Upgrades")
  `ALTER TABLE "_externalAuths" ADD COLUMN IF NOT EXISTS "confirmed" smallint NOT NULL DEFAULT 0`,
  `CREATE INDEX IF NOT EXISTS "_externalAuths_record" ON "_externalAuths" ("collectionId", "recordId")`,
  `CREATE TABLE IF NOT EXISTS "_passkeys" (
    "id" text PRIMARY KEY, "collectionId" text NOT NULL, "recordId" text NOT NULL,
    "publicKey" text NOT NULL, "counter" bigint NOT NULL DEFAULT 0, "transports" text NOT NULL DEFAULT '[]',
    "factor" smallint NOT NULL DEFAULT 0, "created" text NOT NULL, "lastUsed" text)`,
  `CREATE INDEX IF NOT EXISTS "_passkeys_record" ON "_passkeys" ("collectionId", "recordId")`,
  // second factors
  `CREATE TABLE IF NOT EXISTS "_totpFactors" (
    "id" text PRIMARY KEY, "collectionId" text NOT NULL, "recordId" text NOT NULL,
    "secret" text NOT NULL, "lastStep" bigint NOT NULL DEFAULT 0, "created" text NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS "_totpFactors_record" ON "_totpFactors" ("collectionId", "recordId")`,
  `CREATE TABLE IF NOT EXISTS "_recoveryCodes" (
    "id" text PRIMARY KEY, "collectionId" text NOT NULL, "recordId" text NOT NULL, "hash" text NOT NULL, "created" text NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS "_recoveryCodes_record" ON "_recoveryCodes" ("collectionId", "recordId")`,
  `CREATE TABLE IF NOT EXISTS "_mfaAttempts" (
    "id" text PRIMARY KEY, "hash" text NOT NULL, "collectionId" text NOT NULL, "recordId" text NOT NULL,
    "purpose" text NOT NULL, "tries" integer NOT NULL DEFAULT 0, "data" text NOT NULL DEFAULT '',
    "expires" bigint NOT NULL, "created" text NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS "_mfaAttempts_record" ON "_mfaAttempts" ("collectionId", "recordId")`,
  `CREATE INDEX IF NOT EXISTS "_mfaAttempts_expires" ON "_mfaAttempts" ("expires")`,
  `CREATE TABLE IF NOT EXISTS "_mfaTries" ("collectionId" text NOT NULL, "recordId" text NOT NULL, "at" bigint NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS "_mfaTries_record" ON "_mfaTries" ("collectionId", "recordId", "at")`,
  // settings and sticky experiment assignments
  `CREATE TABLE IF NOT EXISTS "_settings" ("key" text PRIMARY KEY, "value" text NOT NULL, "created" text NOT NULL, "updated" text NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS "_assignments" ("experiment" text NOT NULL, "subject" text NOT NULL, "variant" text NOT NULL, "created" text NOT NULL, PRIMARY KEY ("experiment", "subject"))`,
  // mail queue (times in epoch ms), suppressions and verified senders
  `CREATE TABLE IF NOT EXISTS "_mailQueue" ("id" text PRIMARY KEY, "queue" text NOT NULL, "message" text NOT NULL, "account" text NOT NULL DEFAULT '',
    "status" text NOT NULL DEFAULT 'pending', "attempts" integer NOT NULL DEFAULT 0, "next_at" bigint NOT NULL, "last_error" text, "created" bigint NOT NULL, "updated" bigint NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS "_mailQueue_due" ON "_mailQueue" ("status", "next_at")`,
  `CREATE TABLE IF NOT EXISTS "_suppressions" ("email" text NOT NULL, "account" text NOT NULL DEFAULT '', "reason" text NOT NULL, "created" text NOT NULL, "updated" text NOT NULL)`,
  `CREATE UNIQUE INDEX IF NOT EXISTS "_suppressions_key" ON "_suppressions" (lower("email"), "account")`,
  `CREATE TABLE IF NOT EXISTS "_senders" ("id" text PRIMARY KEY, "account" text NOT NULL, "email" text NOT NULL, "status" text NOT NULL,
    "verified_at" text, "token_hash" text, "sent_at" bigint NOT NULL, "created" text NOT NULL, "updated" text NOT NULL)`,
  `CREATE UNIQUE INDEX IF NOT EXISTS "_senders_key" ON "_senders" ("account", lower("email"))`,
  // stateful list cursors: payload until `expires` (epoch ms)
  `CREATE TABLE IF NOT EXISTS "_cursorStates" ("id" text PRIMARY KEY, "payload" text NOT NULL, "expires" bigint NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS "_cursorStates_expires" ON "_cursorStates" ("expires")`,
  // the app's applied migrations
  `CREATE TABLE IF NOT EXISTS "_migrations" ("id" text PRIMARY KEY, "applied_at" text NOT NULL)`,
];

/**
 * `"_svc_jsonb_vector"(jsonb, n)`: the embedding as a pgvector `vector` when it is a JSON array
 * of exactly n numbers that fit a float4, NULL otherwise (so a write never fails on a malformed
 * embedding; the vector query refuses a collection holding one). IMMUTABLE: generated columns
 * call it. Only with the extension installed.
 */
export const VECTOR_FUNCTION_SQL = `CREATE OR REPLACE FUNCTION ${q(VECTOR_FUNCTION)}(v jsonb, n integer) RETURNS vector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
  SELECT CASE WHEN jsonb_typeof(v) = 'array' AND jsonb_array_length(v) = n
    AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(v) AS e WHERE jsonb_typeof(e) <> 'number' OR abs(e::numeric) > 3.4028234e38)
  THEN v::text::vector END
$fn$`;

/**
 * The text search configuration of full-text search (FTS_CONFIG, collection-sql.ts), made once:
 * a copy of `simple` whose words (`word`, `hword`, `hword_part`: those with letters outside ASCII)
 * go through the `unaccent` dictionary first, so `café` is stored and searched as `cafe`, as
 * SQLite's FTS5 folds diacritics (`remove_diacritics 2`). Without the extension (not installed,
 * or no privilege: it is a trusted extension, a database owner may create it) the copy stays plain
 * and accents must match exactly; {@link SEARCH_FOLDS_SQL} tells which. The mapping is decided
 * when the configuration is made and never changed after, since stored tsvector columns keep the
 * words of the configuration they were computed with.
 */
export const SEARCH_CONFIG_SQL = `DO $svc$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_ts_config c WHERE c.cfgname = '${FTS_CONFIG}' AND c.cfgnamespace = (SELECT n.oid FROM pg_namespace n WHERE n.nspname = current_schema())) THEN
    CREATE TEXT SEARCH CONFIGURATION ${FTS_CONFIG} (COPY = pg_catalog.simple);
    BEGIN
      CREATE EXTENSION IF NOT EXISTS unaccent;
      ALTER TEXT SEARCH CONFIGURATION ${FTS_CONFIG} ALTER MAPPING FOR hword, hword_part, word WITH unaccent, simple;
    EXCEPTION WHEN OTHERS THEN
      NULL; -- no unaccent on this server: the configuration stays a plain copy of simple
    END;
  END IF;
END $svc$`;

/** One row, one boolean: whether the search configuration folds accents (maps words through unaccent). */
export const SEARCH_FOLDS_SQL = `SELECT EXISTS (SELECT 1 FROM pg_ts_config_map m JOIN pg_ts_dict d ON d.oid = m.mapdict
  WHERE m.mapcfg = '${FTS_CONFIG}'::regconfig AND d.dictname = 'unaccent')::int`;

/** The log line when full-text search on PostgreSQL does not fold accents. */
export const SEARCH_NO_UNACCENT_WARNING =
  `PostgreSQL: full-text search does not fold accents ("cafe" does not find "café"): the text search configuration ${FTS_CONFIG} was made without the unaccent extension`;

/**
 * Idempotent steps creating the system tables and the `_superusers` collection row; with
 * `vector` (the extension is installed, see {@link ensureVectorExtension}) also the embedding
 * conversion function.
 */
export function bootstrapSteps(opts: { vector?: boolean } = {}): WriteStep[] {
  const su = superusersCollection();
  const steps: WriteStep[] = SYSTEM_DDL.map((sql) => ({ sql, params: [] }));
  steps.push({ sql: SEARCH_CONFIG_SQL, params: [] });
  steps.push({
    sql: `INSERT INTO "_collections" ("id","name","type","system","fields","indexes","options","created","updated")
          VALUES ($1,$2,$3,1,$4,$5,$6,$7,$8) ON CONFLICT DO NOTHING`,
    params: [su.id, su.name, su.type, JSON.stringify(su.fields), '[]', JSON.stringify(su.options), su.created, su.updated],
  });
  if (opts.vector) steps.push({ sql: VECTOR_FUNCTION_SQL, params: [] });
  return steps;
}

/** Runs one statement outside any transaction and answers its rows (a pool's `query`). */
export type PgQuery = (sql: string) => Promise<{ rows: Record<string, unknown>[] }>;

/** Whether vectors are available; `warning` (to log once at startup) when they are not. */
export interface VectorSupport {
  available: boolean;
  /** the installed pgvector version */
  version?: string;
  warning?: string;
}

/** The log line when pgvector is missing (vector fields then have no vector storage, vector queries answer 400). */
export const VECTOR_UNAVAILABLE_WARNING =
  'PostgreSQL: the pgvector extension ("vector") is not available; vector search is off on this server';

/**
 * Creates the `vector` extension when it can (CREATE EXTENSION IF NOT EXISTS, on its own, outside
 * any transaction) and answers whether it is installed. A refusal (not installed on the server,
 * or no privilege) is not an error: `available: false` with the warning and PostgreSQL's reason.
 */
export async function ensureVectorExtension(query: PgQuery): Promise<VectorSupport> {
  let reason = '';
  try {
    await query('CREATE EXTENSION IF NOT EXISTS vector');
  } catch (err) {
    reason = (err as Error).message;
  }
  const { rows } = await query(`SELECT "extversion" FROM pg_extension WHERE "extname" = 'vector'`);
  if (rows.length) return { available: true, version: String(rows[0].extversion) };
  return { available: false, warning: `${VECTOR_UNAVAILABLE_WARNING}${reason ? ` (${reason})` : ''}` };
}

/** The registry upsert (shared with collection-sql.ts), for callers that only import bootstrap. */
export { UPSERT_REGISTRY };
