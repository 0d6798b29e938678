/**
 * `svc doctor` on the server-SQL backend (PostgreSQL: `schema`, `import` and `doctor` work on both
 * backends; docs/operations.md, "Command line"). The same check ids, severities, findings and
 * exit codes as on the embedded database (src/ops/doctor.ts); what differs is where each check
 * looks:
 *
 * - `loose-file-modes`: the data directory when it exists on this machine (it still holds the
 *   lock, the slow-query log and locally stored files); not run when it does not.
 * - `wal-size`: not run (PostgreSQL manages its own write-ahead log).
 * - `token-secret`: the cluster's shared secret, the row `token_secret` of `_secrets`
 *   (src/store/pg/open.ts), not a file.
 * - `encryption-key-backup`: the shared key, the row `encryption_key` of `_secrets`, unless
 *   SERVICE_ENCRYPTION_KEY is set. A key kept in the same database as the values it protects is a
 *   warning: any dump, replica or stolen backup of the database reads the encrypted fields.
 * - `public-write-rule`, `open-signup`, `no-superuser`: the same tables, read over PostgreSQL.
 * - `missing-index`: the slow-query log of the data directory (plans in SQLite's wording, see
 *   src/store/pg/reader.ts planDetails) against the leading columns of the tables' indexes in
 *   `pg_index`.
 *
 * Read-only: one connection whose session is `default_transaction_read_only`, with a statement
 * timeout; nothing is created, not even the system tables.
 */
import { statSync } from 'node:fs';
import pg from 'pg';
import { rowToCollection } from '../store/collection-row.js';
import type { Collection } from '../model/schema.js';
import {
  checkFileModes, checkMissingIndexes, checkOpenSignup, checkPublicWrites, superuserFindings, withDeclared,
  DoctorError, type CheckedCollection, type DoctorOptions, type DoctorReport, type Finding,
} from './doctor.js';

/** How long the doctor waits for the server to answer a connection or a statement, ms. */
const TIMEOUT_MS = 10_000;
const MAX_LISTED = 10;

/** `postgres://user@host:port/db`: the URL without its password or query, for messages. */
export function redactDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    const user = u.username ? `${decodeURIComponent(u.username)}@` : '';
    return `${u.protocol}//${user}${u.host}${u.pathname}`;
  } catch {
    return 'the PostgreSQL database (an unreadable URL)';
  }
}

const SELECT_COLLECTIONS = 'SELECT "id","name","type","system","fields","indexes","options","listRule","viewRule","createRule","updateRule","deleteRule","created","updated" FROM "_collections" ORDER BY "name"';
/** The leading column of every index of every visible table (expression indexes have none). */
const INDEX_LEADS = `SELECT c.relname, a.attname FROM pg_index i
  JOIN pg_class c ON c.oid = i.indrelid
  JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
  WHERE pg_table_is_visible(c.oid)`;

/**
 * Runs every check on the PostgreSQL database of `opts.databaseUrl` (and `opts.dataDir` when it
 * exists), read-only.
 * @throws DoctorError `io` when the server cannot be reached or a system table cannot be read,
 *   `no_database` when the database holds no svc tables
 */
export async function runDoctorPostgres(opts: DoctorOptions & { databaseUrl: string }): Promise<DoctorReport> {
  const where = redactDatabaseUrl(opts.databaseUrl);
  const env = opts.env ?? process.env;
  const client = new pg.Client({ connectionString: opts.databaseUrl, application_name: 'svc-doctor', connectionTimeoutMillis: TIMEOUT_MS, statement_timeout: TIMEOUT_MS });
  client.on('error', () => undefined); // a connection lost mid-run fails the query that sees it
  try {
    await client.connect();
  } catch (err) {
    throw new DoctorError('io', `cannot connect to ${where}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const query = async (sql: string, params: unknown[] = []): Promise<unknown[][]> => (await client.query({ text: sql, values: params, rowMode: 'array' })).rows as unknown[][];
  try {
    await query('SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY');
    const [[has]] = await query(`SELECT to_regclass('"_collections"') IS NOT NULL`);
    if (has !== true) throw new DoctorError('no_database', `no svc tables in ${where} (no _collections table; \`svc serve\` with this SERVICE_DATABASE_URL creates them)`);

    const findings: Finding[] = [];
    let checks = 0;
    const run = async (fn: () => Finding[] | Promise<Finding[]>) => {
      findings.push(...(await fn()));
      checks++;
    };
    const hasDir = statSync(opts.dataDir, { throwIfNoEntry: false })?.isDirectory() === true;
    if (hasDir) await run(() => checkFileModes(opts.dataDir));
    const secrets = await readSecrets(query, where);
    await run(() => checkSharedTokenSecret(secrets.get('token_secret'), where));

    let stored: Collection[];
    try {
      stored = (await query(SELECT_COLLECTIONS)).map(rowToCollection);
    } catch (err) {
      throw new DoctorError('io', `cannot read the collections of ${where}: ${err instanceof Error ? err.message : String(err)}`);
    }
    const collections = withDeclared(stored, opts.declared ?? []);
    await run(() => checkPublicWrites(collections));
    await run(() => checkOpenSignup(collections));
    await run(async () => {
      const rows = await query(`SELECT CASE WHEN to_regclass('"_superusers"') IS NULL THEN 0 ELSE (SELECT COUNT(*) FROM "_superusers") END`).catch(() => [[0]]);
      return superuserFindings(Number(rows[0][0]));
    });
    await run(() => checkSharedEncryptionKey(secrets.has('encryption_key'), collections, env, where));
    const leads = new Map<string, Set<string>>();
    for (const [table, column] of await query(INDEX_LEADS)) {
      const set = leads.get(String(table)) ?? new Set<string>(['id']);
      set.add(String(column));
      leads.set(String(table), set);
    }
    await run(() => (hasDir ? checkMissingIndexes(opts.dataDir, collections, (table) => leads.get(table) ?? new Set(['id'])) : []));
    return { findings, checks_run: checks, target: hasDir ? `${where} and ${opts.dataDir}` : where };
  } catch (err) {
    if (err instanceof DoctorError) throw err;
    throw new DoctorError('io', `cannot read ${where}: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The rows of `_secrets` (name → base64 value); none when the table is missing. */
async function readSecrets(query: (sql: string) => Promise<unknown[][]>, where: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  try {
    const [[exists]] = await query(`SELECT to_regclass('"_secrets"') IS NOT NULL`);
    if (exists !== true) return out;
    for (const [name, value] of await query('SELECT "name", "value" FROM "_secrets"')) out.set(String(name), String(value));
  } catch (err) {
    throw new DoctorError('io', `cannot read the shared secrets of ${where}: ${err instanceof Error ? err.message : String(err)}`);
  }
  return out;
}

/** `token-secret` on PostgreSQL: the shared signing secret missing (info) or not 32 bytes (error). */
export function checkSharedTokenSecret(value: string | undefined, where: string): Finding[] {
  if (value === undefined) {
    return [{
      check_id: 'token-secret',
      severity: 'info',
      message: `${where} holds no token secret (no "token_secret" row in "_secrets"): the next start generates one for every instance (had servers issued tokens with a lost one, every session and issued token stops working)`,
      fix: 'restore the "_secrets" row from a backup of this database if it was lost; otherwise nothing to do (the first server to start creates it)',
    }];
  }
  const bytes = Buffer.from(value.trim(), 'base64').length;
  if (bytes === 32) return [];
  return [{
    check_id: 'token-secret',
    severity: 'error',
    message: `the "token_secret" row of "_secrets" in ${where} holds ${bytes} byte(s) of base64, not 32: every server refuses to start with it`,
    fix: `restore the row from a backup, or delete it (DELETE FROM "_secrets" WHERE "name" = 'token_secret') so the next start generates a new one (every session ends)`,
  }];
}

/**
 * `encryption-key-backup` on PostgreSQL: the shared key lives in `_secrets`, in the same database
 * as the values it protects, unless SERVICE_ENCRYPTION_KEY is set.
 */
export function checkSharedEncryptionKey(hasRow: boolean, collections: readonly CheckedCollection[], env: NodeJS.ProcessEnv, where: string): Finding[] {
  const encrypted: string[] = [];
  for (const c of collections) for (const f of c.fields) if (f.options?.encrypted) encrypted.push(`${c.name}.${f.name}`);
  const list = encrypted.slice(0, MAX_LISTED).join(', ') + (encrypted.length > MAX_LISTED ? `, and ${encrypted.length - MAX_LISTED} more` : '');
  const fromEnv = !!env.SERVICE_ENCRYPTION_KEY?.trim();
  const moveKey = `copy the key into your secrets store and set SERVICE_ENCRYPTION_KEY to it on every instance (SELECT "value" FROM "_secrets" WHERE "name" = 'encryption_key'; the base64 is accepted as is), restart them, then DELETE FROM "_secrets" WHERE "name" = 'encryption_key'`;
  if (encrypted.length === 0) {
    if (!hasRow) return [];
    return [{
      check_id: 'encryption-key-backup',
      severity: 'info',
      message: `the field-encryption key is stored in ${where} ("_secrets"); no collection uses encrypted fields yet`,
      fix: `nothing to do now; before encrypting a field, consider keeping the key outside the database: ${moveKey}`,
    }];
  }
  if (fromEnv) {
    return [{
      check_id: 'encryption-key-backup',
      severity: 'info',
      message: `encrypted fields (${list}) use the key in SERVICE_ENCRYPTION_KEY${hasRow ? ` (a key row also remains in "_secrets" of ${where}; servers with SERVICE_ENCRYPTION_KEY ignore it)` : ''}`,
      fix: hasRow
        ? `keep that key in your secrets store; once every instance has SERVICE_ENCRYPTION_KEY, remove the stored copy: DELETE FROM "_secrets" WHERE "name" = 'encryption_key'`
        : 'keep that key in your secrets store: a database backup is unreadable without it',
    }];
  }
  if (!hasRow) {
    return [{
      check_id: 'encryption-key-backup',
      severity: 'error',
      message: `encrypted fields (${list}) exist but ${where} holds no key ("encryption_key" in "_secrets") and SERVICE_ENCRYPTION_KEY is not set here: a start creates a new key and their values read as null`,
      fix: 'restore the "_secrets" row from the backup made with these values, or set SERVICE_ENCRYPTION_KEY to the key they were written with',
    }];
  }
  return [{
    check_id: 'encryption-key-backup',
    severity: 'warning',
    message: `encrypted fields (${list}) use the key stored in the same database (${where}, "_secrets"): any dump, replica or backup of the database reads them`,
    fix: moveKey,
  }];
}
