/**
 * `svc doctor`'s checks (docs/operations.md, "Command line": exit codes, findings streams, check
 * ids in dash-case; access rules: open signup on a non-system auth collection is a warning,
 * other public writes are errors; `svc doctor [--json]`; docs/operations.md,
 * "Doctor").
 *
 * The doctor reads a data directory without changing it and without its lock, so it runs beside
 * a live server: file modes and sizes first (the WAL's size before any connection touches it),
 * then the database through a query-only connection, then the slow-query log
 * (src/ops/slow-queries.ts). Each check adds findings `{check_id, severity, message, fix}`; a
 * check that finds nothing adds none.
 */
import { existsSync, readdirSync, readFileSync, statSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import Database from 'libsql';
import { databasePath, looseModes } from '../files/data-paths.js';
import { encryptionKeyPath } from '../records/encryption.js';
import { rowToCollection } from '../store/collection-row.js';
import type { Collection, RuleName } from '../model/schema.js';
import { RULE_NAMES } from '../model/schema.js';
import { readSlowQueries, type SlowQueryEntry } from './slow-queries.js';

export type Severity = 'error' | 'warning' | 'info';

/** One finding, as printed (one JSON object per line under `--json`). */
export interface Finding {
  /** dash-case check id, one of {@link CHECK_IDS} */
  check_id: string;
  severity: Severity;
  /** what was found, naming the collection, rule, file or query shape */
  message: string;
  /** what to do about it */
  fix: string;
}

/** What a run found; `checks_run` counts the checks that ran (each may add 0..n findings). */
export interface DoctorReport {
  findings: Finding[];
  checks_run: number;
  /** what was checked, for the text summary: the data directory, or the PostgreSQL database (no password) and the directory */
  target?: string;
}

/** Every check, in the order they run. */
export const CHECK_IDS = [
  'loose-file-modes',
  'wal-size',
  'token-secret',
  'public-write-rule',
  'open-signup',
  'no-superuser',
  'encryption-key-backup',
  'missing-index',
] as const;

/** WAL size (bytes) past which `wal-size` warns. */
export const WAL_WARN_BYTES = 64 * 1024 * 1024;
/** Files and folders the `loose-file-modes` walk looks at before it stops (stored files can be many). */
const MAX_WALK = 10_000;
/** Paths a finding's message lists before `and N more`. */
const MAX_LISTED = 10;
const WRITE_RULES: readonly RuleName[] = ['createRule', 'updateRule', 'deleteRule'];

/**
 * The doctor could not do its job: exit 1 (codes as for `svc backup`, docs/operations.md):
 * `not_found` (no data directory), `no_database` (no `data.db`), `io` (the database cannot be
 * read, or is no svc database).
 */
export type DoctorErrorCode = 'not_found' | 'no_database' | 'io';

export class DoctorError extends Error {
  readonly code: DoctorErrorCode;
  constructor(code: DoctorErrorCode, message: string) {
    super(message);
    this.name = 'DoctorError';
    this.code = code;
  }
}

export interface DoctorOptions {
  /** absolute path of the data directory */
  dataDir: string;
  /**
   * The PostgreSQL database of the servers (`SERVICE_DATABASE_URL`, or the app definition's
   * `database`): the checks read it (src/ops/doctor-pg.ts) instead of `<dataDir>/data.db`.
   */
  databaseUrl?: string;
  /** the environment (SERVICE_ENCRYPTION_KEY is noticed); default process.env */
  env?: NodeJS.ProcessEnv;
  /**
   * An app's declared collections (`--app`; the REST API's collection JSON): a server applies
   * them at start, so their type, rules and fields count instead of the stored ones.
   */
  declared?: readonly Record<string, unknown>[];
}

/** A collection as the checks see it, noting whether an app declares it (`--app`). */
export interface CheckedCollection extends Collection {
  declared?: boolean;
}

/**
 * Runs every check, read-only: on the PostgreSQL database of `opts.databaseUrl` when given
 * (src/ops/doctor-pg.ts), else on the embedded database of `opts.dataDir`.
 * @throws DoctorError when the directory or its database is missing or cannot be read
 */
export async function runDoctor(opts: DoctorOptions): Promise<DoctorReport> {
  if (opts.databaseUrl) return (await import('./doctor-pg.js')).runDoctorPostgres({ ...opts, databaseUrl: opts.databaseUrl });
  return runDoctorSqlite(opts);
}

/**
 * Runs every check on `opts.dataDir`'s embedded database, read-only.
 * @throws DoctorError when the directory or its database is missing or cannot be read
 */
export function runDoctorSqlite(opts: DoctorOptions): DoctorReport {
  const { dataDir } = opts;
  const env = opts.env ?? process.env;
  let dirStat: Stats;
  try {
    dirStat = statSync(dataDir);
  } catch {
    throw new DoctorError('not_found', `no data directory at ${dataDir} (give --data-dir or SERVICE_DATA_DIR)`);
  }
  if (!dirStat.isDirectory()) throw new DoctorError('not_found', `${dataDir} is not a directory`);
  const dbFile = databasePath(dataDir);
  if (!existsSync(dbFile)) throw new DoctorError('no_database', `no database in ${dataDir} (data.db is missing; \`svc serve\` creates it)`);

  const findings: Finding[] = [];
  let checks = 0;
  const run = (fn: () => Finding[]) => {
    findings.push(...fn());
    checks++;
  };
  // files first: nothing has opened the database yet
  run(() => checkFileModes(dataDir));
  run(() => checkWalSize(dataDir));
  run(() => checkTokenSecret(dataDir));

  const db = openReadOnly(dbFile);
  try {
    const collections = withDeclared(loadCollections(db), opts.declared ?? []);
    run(() => checkPublicWrites(collections));
    run(() => checkOpenSignup(collections));
    run(() => checkSuperuser(db));
    run(() => checkEncryptionKey(dataDir, collections, env));
    run(() => checkMissingIndexes(dataDir, collections, (table) => indexedLeadColumns(db, table)));
  } finally {
    db.close();
  }
  return { findings, checks_run: checks, target: dataDir };
}

/** Counts of a report's findings by severity, as the summary object shows them. */
export function summarize(report: DoctorReport): { errors: number; warnings: number; infos: number; checks_run: number } {
  let errors = 0;
  let warnings = 0;
  let infos = 0;
  for (const f of report.findings) {
    if (f.severity === 'error') errors++;
    else if (f.severity === 'warning') warnings++;
    else infos++;
  }
  return { errors, warnings, infos, checks_run: report.checks_run };
}

/** Exit code of a report: 2 when a finding needs judgment (an error or a warning), else 0. */
export function exitCode(report: DoctorReport): 0 | 2 {
  return report.findings.some((f) => f.severity !== 'info') ? 2 : 0;
}

// ---------------------------------------------------------------------------------------------
// the database

type Db = InstanceType<typeof Database>;

/**
 * A query-only connection (no lock of the data directory is taken; WAL lets it read beside a
 * running server). @throws DoctorError `io` when the file is not a readable svc database
 */
function openReadOnly(file: string): Db {
  let db: Db | null = null;
  try {
    db = new Database(file);
    db.exec('PRAGMA query_only = 1');
    db.exec('PRAGMA busy_timeout = 2000');
    const has = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_collections'`).raw(true).get([]);
    if (!has) throw new DoctorError('io', `${file} is not an svc database (no _collections table; has \`svc serve\` run on it?)`);
    return db;
  } catch (err) {
    db?.close();
    if (err instanceof DoctorError) throw err;
    throw new DoctorError('io', `cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

const SELECT_COLLECTIONS = 'SELECT "id","name","type","system","fields","indexes","options","listRule","viewRule","createRule","updateRule","deleteRule","created","updated" FROM "_collections" ORDER BY "name"';

/** @throws DoctorError `io` when a row cannot be read */
function loadCollections(db: Db): Collection[] {
  try {
    return (db.prepare(SELECT_COLLECTIONS).raw(true).all([]) as unknown[][]).map(rowToCollection);
  } catch (err) {
    throw new DoctorError('io', `cannot read the collections: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** The stored collections with an app's declarations laid over them (by name, case-insensitive). */
export function withDeclared(stored: Collection[], declared: readonly Record<string, unknown>[]): CheckedCollection[] {
  const out: CheckedCollection[] = stored.map((c) => ({ ...c, declared: false }));
  for (const raw of declared) {
    if (typeof raw.name !== 'string') continue;
    const name = raw.name;
    const at = out.findIndex((c) => c.name.toLowerCase() === name.toLowerCase());
    const prev = at >= 0 ? out[at] : null;
    const next: CheckedCollection = {
      ...(prev ?? { id: '', name, system: false, indexes: [], options: {}, listRule: null, viewRule: null, createRule: null, updateRule: null, deleteRule: null, created: '', updated: '', fields: [], type: 'base' }),
      declared: true,
    };
    next.type = raw.type === 'auth' ? 'auth' : raw.type === 'base' ? 'base' : (prev?.type ?? 'base');
    // a rule the declaration leaves out keeps the stored one, as the server's update does
    for (const r of RULE_NAMES) if (r in raw) next[r] = typeof raw[r] === 'string' ? (raw[r] as string) : null;
    if (Array.isArray(raw.fields)) {
      next.fields = raw.fields.filter((f): f is Record<string, unknown> => typeof f === 'object' && f !== null).map((f) => ({
        id: '', name: String(f.name), type: f.type as Collection['fields'][number]['type'],
        options: (typeof f.options === 'object' && f.options !== null ? f.options : {}) as Collection['fields'][number]['options'],
      }));
    }
    if (prev) out[at] = next;
    else out.push(next);
  }
  return out;
}

/** The columns of `table` that lead some index (primary key included), i.e. usable for a lookup. */
function indexedLeadColumns(db: Db, table: string): Set<string> {
  const out = new Set<string>(['id']);
  try {
    for (const [name] of db.prepare('SELECT name FROM pragma_index_list(?)').raw(true).all([table]) as string[][]) {
      const first = db.prepare('SELECT name FROM pragma_index_info(?) ORDER BY seqno LIMIT 1').raw(true).get([name]) as string[] | undefined;
      if (first?.[0]) out.add(first[0]);
    }
  } catch {
    /* the table is gone: nothing is indexed */
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// the checks

const isPublic = (rule: string | null) => rule !== null && rule.trim() === '@public';
const label = (c: CheckedCollection) => `collection "${c.name}"${c.declared ? ' (declared by the app)' : ''}`;

function modeOf(path: string): number | null {
  try {
    return statSync(path).mode & 0o777;
  } catch {
    return null;
  }
}

const octal = (mode: number) => mode.toString(8).padStart(4, '0');

/** `loose-file-modes`: the data directory, its files and folders open to group or others. */
export function checkFileModes(dataDir: string): Finding[] {
  const loose = looseModes(dataDir);
  const seen = new Set(loose.map((l) => l.replace(/ \(mode \d+\)$/, '')));
  // every other file and folder (the lock, the slow-query log, stored files), up to MAX_WALK
  let visited = 0;
  const walk = (dir: string) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (++visited > MAX_WALK) return;
      const p = join(dir, name);
      let st: Stats;
      try {
        st = statSync(p);
      } catch {
        continue;
      }
      if (!seen.has(p) && (st.mode & 0o077) !== 0) {
        seen.add(p);
        loose.push(`${p} (mode ${octal(st.mode & 0o777)})`);
      }
      if (st.isDirectory()) walk(p);
    }
  };
  walk(dataDir);
  if (!loose.length) return [];
  const listed = loose.slice(0, MAX_LISTED).join(', ') + (loose.length > MAX_LISTED ? `, and ${loose.length - MAX_LISTED} more` : '');
  return [{
    check_id: 'loose-file-modes',
    severity: 'warning',
    message: `${loose.length} path(s) in the data directory are readable or writable by group or others (expected 0700 for folders, 0600 for files): ${listed}`,
    fix: `chmod -R go-rwx ${JSON.stringify(dataDir)} (svc creates folders 0700 and files 0600; another local user could read records, keys and uploads)`,
  }];
}

/** `wal-size`: a write-ahead log over {@link WAL_WARN_BYTES}. */
export function checkWalSize(dataDir: string): Finding[] {
  let size: number;
  try {
    size = statSync(`${databasePath(dataDir)}-wal`).size;
  } catch {
    return [];
  }
  if (size <= WAL_WARN_BYTES) return [];
  const mb = (size / (1024 * 1024)).toFixed(1);
  return [{
    check_id: 'wal-size',
    severity: 'warning',
    message: `data.db-wal is ${mb} MB (over ${WAL_WARN_BYTES / (1024 * 1024)} MB): reads slow down and the disk fills while it grows; a WAL this large usually means a long-running read kept checkpoints from finishing`,
    fix: 'restart the server (a clean stop checkpoints the WAL), or checkpoint it with `PRAGMA wal_checkpoint(TRUNCATE)` while no long read runs; if it grows back, look for a client holding a read open',
  }];
}

/** `token-secret`: the signing secret missing, shorter than 32 bytes, unreadable or open to others. */
export function checkTokenSecret(dataDir: string): Finding[] {
  const file = join(dataDir, 'token_secret');
  const out: Finding[] = [];
  if (!existsSync(file)) {
    // a data directory no server has started yet has none either: information, not a problem
    return [{
      check_id: 'token-secret',
      severity: 'info',
      message: `${file} is missing: the next start generates a new secret (had a server issued tokens with a lost one, every session and issued token stops working)`,
      fix: 'restore token_secret from a backup of this data directory if it was lost; otherwise nothing to do (the server creates it on start)',
    }];
  }
  let bytes: number;
  try {
    bytes = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64').length;
  } catch (err) {
    return [{
      check_id: 'token-secret',
      severity: 'error',
      message: `${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)}): the server cannot start`,
      fix: 'give the file to the user the server runs as, mode 0600 (chown, chmod 600)',
    }];
  }
  if (bytes < 32) {
    out.push({
      check_id: 'token-secret',
      severity: 'error',
      message: `${file} holds ${bytes} byte(s) of base64, fewer than 32: the server refuses to start with it`,
      fix: 'restore it from a backup, or delete it so the next start generates a new one (every session ends)',
    });
  }
  const mode = modeOf(file);
  if (mode !== null && (mode & 0o077) !== 0) {
    out.push({
      check_id: 'token-secret',
      severity: 'error',
      message: `${file} has mode ${octal(mode)}: another local user who reads it can sign tokens as any account`,
      fix: `chmod 600 ${JSON.stringify(file)}, then rotate it (delete it and restart: every session ends) if someone may have read it`,
    });
  }
  return out;
}

/** `public-write-rule`: a create, update or delete rule of `@public` (open signup excepted). */
export function checkPublicWrites(collections: readonly CheckedCollection[]): Finding[] {
  const out: Finding[] = [];
  for (const c of collections) {
    for (const r of WRITE_RULES) {
      if (!isPublic(c[r])) continue;
      if (r === 'createRule' && c.type === 'auth' && !c.system) continue; // open signup: its own check
      const verb = r.slice(0, -4);
      out.push({
        check_id: 'public-write-rule',
        severity: 'error',
        message: `${label(c)} ${r} is @public: anyone, signed in or not, can ${verb} its records`,
        fix: `set ${r} to a filter that names who may ${verb} (e.g. "@request.auth.id != ''" for any signed-in account, or an owner check such as "author = @request.auth.id"), or to null for superusers only`,
      });
    }
  }
  return out;
}

/** `open-signup`: a non-system auth collection anyone may create accounts in. */
export function checkOpenSignup(collections: readonly CheckedCollection[]): Finding[] {
  return collections
    .filter((c) => c.type === 'auth' && !c.system && isPublic(c.createRule))
    .map((c) => ({
      check_id: 'open-signup',
      severity: 'warning' as const,
      message: `${label(c)} is an auth collection whose createRule is @public: anyone can sign up`,
      fix: 'fine for a public product with open registration; otherwise set createRule to null (accounts made by superusers or server code) or to a filter, and consider require_verified in its auth options',
    }));
}

/** `no-superuser`: `_superusers` is empty. */
function checkSuperuser(db: Db): Finding[] {
  let n: number;
  try {
    n = Number((db.prepare('SELECT COUNT(*) FROM "_superusers"').raw(true).get([]) as unknown[])[0]);
  } catch {
    n = 0; // no table yet: no superuser either
  }
  return superuserFindings(n);
}

/** `no-superuser` for a count of `_superusers` rows. */
export function superuserFindings(n: number): Finding[] {
  if (n > 0) return [];
  return [{
    check_id: 'no-superuser',
    severity: 'warning',
    message: 'no superuser exists: nobody can manage collections, settings or accounts through the API',
    fix: 'svc superuser create --email=<email> --password=<password> (with the same --data-dir)',
  }];
}

/** `encryption-key-backup`: encrypted fields depend on a key kept outside the database. */
export function checkEncryptionKey(dataDir: string, collections: readonly CheckedCollection[], env: NodeJS.ProcessEnv): Finding[] {
  const file = encryptionKeyPath(dataDir);
  const encrypted: string[] = [];
  for (const c of collections) for (const f of c.fields) if (f.options?.encrypted) encrypted.push(`${c.name}.${f.name}`);
  const fromEnv = !!env.SERVICE_ENCRYPTION_KEY?.trim();
  const hasFile = existsSync(file);
  const list = encrypted.slice(0, MAX_LISTED).join(', ') + (encrypted.length > MAX_LISTED ? `, and ${encrypted.length - MAX_LISTED} more` : '');
  if (encrypted.length === 0) {
    if (!hasFile) return [];
    return [{
      check_id: 'encryption-key-backup',
      severity: 'info',
      message: `${file} exists; no collection uses encrypted fields yet`,
      fix: 'nothing to do now; once a field is encrypted, back this file up separately from the database (values cannot be read without it)',
    }];
  }
  if (fromEnv) {
    return [{
      check_id: 'encryption-key-backup',
      severity: 'info',
      message: `encrypted fields (${list}) use the key in SERVICE_ENCRYPTION_KEY`,
      fix: 'keep that key in your secrets store: a database backup is unreadable without it',
    }];
  }
  if (!hasFile) {
    return [{
      check_id: 'encryption-key-backup',
      severity: 'error',
      message: `encrypted fields (${list}) exist but ${file} is missing and SERVICE_ENCRYPTION_KEY is not set here: a start creates a new key and their values read as null`,
      fix: 'restore encryption_key from the backup made with this database, or set SERVICE_ENCRYPTION_KEY to the key the values were written with',
    }];
  }
  return [{
    check_id: 'encryption-key-backup',
    severity: 'warning',
    message: `encrypted fields (${list}) can be read only with ${file}: losing that file loses their values, and a database backup is useless without it`,
    fix: 'back up encryption_key separately from the database (a password manager or secrets store), and restore it together with any database backup',
  }];
}

/**
 * A plan line walking the collection's whole table (`SCAN r`, `SCAN "posts"`, or `SCAN r USING
 * INDEX …`: a walk in an index's order, which narrows nothing by the filter).
 */
function scansTable(line: string, table: string): boolean {
  const m = /^SCAN (\S+)/.exec(line);
  if (!m) return false;
  const name = m[1].replace(/^"|"$/g, '');
  return name === 'r' || name === table;
}

/** The fields a filter shape compares with `=` or `in` (the best leading columns of an index). */
function equalityFields(filter: string | null): Set<string> {
  const out = new Set<string>();
  if (filter) for (const m of filter.matchAll(/(?:^|[\s(])([A-Za-z_]\w*)(?:\.[\w.]+)? (?:=|in) /g)) out.add(m[1]);
  return out;
}

/** Whether the stored time `a` (`2025-01-01 12:00:00.000Z` or ISO 8601) is later than `b`. */
function isAfter(a: string, b: string): boolean {
  const ta = Date.parse(a.replace(' ', 'T'));
  const tb = Date.parse(b);
  return Number.isFinite(ta) && Number.isFinite(tb) && ta > tb;
}

interface IndexGroup {
  collection: string;
  /** `scan`: the plan reads the whole table; `sort`: it sorts the matching rows in a temporary b-tree */
  reason: 'scan' | 'sort';
  fields: string[];
  shapes: string[];
  count: number;
  maxMs: number;
  last: string;
}

/**
 * `missing-index`: from the slow-query log, query shapes whose latest plan scans the collection's
 * table (or sorts through a temporary b-tree) on fields that no index leads; one finding per
 * collection and set of fields, naming the index to add. A line older than the collection's last
 * change is skipped (its plan may be stale), and `indexed(table)` (the columns that lead an index
 * now) keeps indexed fields out of the suggestion.
 */
export function checkMissingIndexes(dataDir: string, collections: readonly CheckedCollection[], indexed: (table: string) => Set<string>): Finding[] {
  const { entries } = readSlowQueries(dataDir);
  if (!entries.length) return [];
  // the latest line of each collection and shape (a newer plan replaces an older one)
  const latest = new Map<string, SlowQueryEntry & { count: number; maxMs: number }>();
  for (const e of entries) {
    const key = `${e.collection}\u0000${e.shape}`;
    const prev = latest.get(key);
    latest.set(key, { ...e, count: (prev?.count ?? 0) + 1, maxMs: Math.max(prev?.maxMs ?? 0, e.duration_ms) });
  }
  const byName = new Map(collections.map((c) => [c.name, c]));
  const indexCache = new Map<string, Set<string>>();
  const groups = new Map<string, IndexGroup>();
  for (const e of latest.values()) {
    const c = byName.get(e.collection);
    if (!c) continue; // the collection is gone
    // a collection changed after the line (an index added, a field dropped) may plan differently
    // now: its next slow list is logged afresh (a new schema generation) and judged then
    if (isAfter(c.updated, e.ts)) continue;
    const columns = new Set(['id', 'created', 'updated', ...c.fields.filter((f) => !f.options?.encrypted).map((f) => f.name)]);
    let have = indexCache.get(c.name);
    if (!have) indexCache.set(c.name, (have = indexed(c.name)));
    const usable = (names: string[]) => [...new Set(names)].filter((f) => columns.has(f) && !have.has(f));
    let reason: IndexGroup['reason'] = 'scan';
    const eq = equalityFields(e.filter);
    // equality fields first: they make the best leading column
    let fields = e.plan.some((l) => scansTable(l, c.name)) ? usable(e.fields).sort((a, b) => Number(eq.has(b)) - Number(eq.has(a))) : [];
    if (!fields.length && e.plan.some((l) => l.includes('TEMP B-TREE FOR ORDER BY'))) {
      reason = 'sort';
      fields = usable(e.sort_fields);
    }
    if (!fields.length) continue;
    const key = `${c.name}\u0000${reason}\u0000${fields.join(',')}`;
    const g = groups.get(key) ?? { collection: c.name, reason, fields, shapes: [], count: 0, maxMs: 0, last: '' };
    g.shapes.push(e.shape);
    g.count += e.count;
    g.maxMs = Math.max(g.maxMs, e.maxMs);
    if (e.ts > g.last) g.last = e.ts;
    groups.set(key, g);
  }
  const out: Finding[] = [];
  for (const g of groups.values()) {
    const lead = g.fields[0];
    const name = `${g.collection}_${lead}`.replace(/[^A-Za-z0-9_]/g, '_');
    const sql = `CREATE INDEX ${name} ON "${g.collection}" ("${lead}")`;
    const together = g.fields.length > 1
      ? `; lists that always filter on ${g.fields.map((f) => `"${f}"`).join(', ')} together may do better with one index over them in that order`
      : '';
    const shapes = g.shapes.slice(0, 3).map((s) => JSON.stringify(s)).join(', ') + (g.shapes.length > 3 ? `, and ${g.shapes.length - 3} more` : '');
    out.push({
      check_id: 'missing-index',
      severity: 'warning',
      message: `collection "${g.collection}": slow lists (${g.count} logged, up to ${Math.round(g.maxMs)} ms, last ${g.last}) ${g.reason === 'scan' ? 'read the whole table' : 'sort every matching row in a temporary b-tree'}: no index leads with ${g.fields.length > 1 ? 'any of ' : ''}${g.fields.map((f) => `"${f}"`).join(', ')}; query shape(s): ${shapes}`,
      fix: `add an index on "${lead}" to the collection's indexes: PATCH /api/collections/${g.collection} with indexes: [...the existing ones, ${JSON.stringify(sql)}] (or {"name":"${name}","fields":["${lead}"]})${together}; it is built in one transaction, which takes a while on a large table`,
    });
  }
  return out;
}
