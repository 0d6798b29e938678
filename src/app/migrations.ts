/**
 * The app definition's `migrations` (docs/framework.md, "Migrations";
 * docs/operations.md, "Command line": `migrate`, `migrate status`, `migrate preview`): either
 * `[{id, up(tx)}]` in the order to run, or a directory of `NNNN_name.sql` / `NNNN_name.js`
 * (`.mjs`) files run in file-name order, whose id is the file name without its extension.
 *
 * A `.sql` file runs as one script; a `.js` file's default export (or its named `up`) is
 * `up(tx)`. Every migration runs in one transaction with the row recording it (see
 * src/store/sqlite/migrations-sql.ts). `app.start()` and `svc serve --app` apply pending ones
 * before the port opens; `svc migrate` applies them offline.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { AppliedMigration, MigrationTx, RunnableMigration } from '../store/migrations.js';

export type { MigrationTx } from '../store/migrations.js';

/** A migration written in the definition. */
export interface MigrationDefinition {
  /** 1 to 200 characters; unique; recorded once applied */
  id: string;
  up: (tx: MigrationTx) => unknown;
}

/** The `migrations` key: an ordered list, or a directory (a path, or a file: URL). */
export type MigrationsOption = MigrationDefinition[] | string | URL;

/** A migration file name: four or more digits, `_`, a name, `.sql`, `.js` or `.mjs`. */
export const MIGRATION_FILE = /^(\d{4,}_[A-Za-z0-9_.-]+)\.(sql|js|mjs)$/;
/** Extensions a migration file may have; other files in the directory are listed as unknown. */
const MIGRATION_EXT = /\.(sql|js|mjs|cjs|ts)$/;

function dirOf(option: string | URL): string {
  return option instanceof URL ? fileURLToPath(option) : resolve(option);
}

/** The directory's migration files (sorted) and its other files. */
export function scanMigrationDir(option: string | URL): { files: { id: string; file: string; kind: 'sql' | 'js' }[]; unknown: string[] } {
  const dir = dirOf(option);
  const files: { id: string; file: string; kind: 'sql' | 'js' }[] = [];
  const unknown: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const m = MIGRATION_FILE.exec(name);
    if (m) files.push({ id: m[1], file: join(dir, name), kind: m[2] === 'sql' ? 'sql' : 'js' });
    else unknown.push(name);
  }
  return { files, unknown };
}

/**
 * Problems with a `migrations` value, for defineApp (synchronous: a directory is read now).
 * Answers one line per problem; empty when good.
 */
export function migrationProblems(value: unknown): string[] {
  const out: string[] = [];
  if (typeof value === 'string' || value instanceof URL) {
    let dir: string;
    try {
      dir = dirOf(value);
    } catch (err) {
      return [`migrations: ${(err as Error).message}`];
    }
    try {
      if (!statSync(dir).isDirectory()) return [`migrations: ${dir} is not a directory`];
    } catch {
      return [`migrations: the directory ${dir} does not exist`];
    }
    const { files, unknown } = scanMigrationDir(value);
    for (const name of unknown) {
      if (MIGRATION_EXT.test(name)) out.push(`migrations: ${name} is not a migration file name (NNNN_name.sql or NNNN_name.js)`);
    }
    const ids = new Set<string>();
    for (const f of files) {
      if (ids.has(f.id)) out.push(`migrations: two files are named ${f.id}`);
      ids.add(f.id);
    }
    return out;
  }
  if (!Array.isArray(value)) return ['migrations: must be an array of {id, up(tx)} or a directory path'];
  const ids = new Set<string>();
  value.forEach((m, i) => {
    const at = `migrations[${i}]`;
    if (typeof m !== 'object' || m === null) return void out.push(`${at}: must be an object {id, up(tx)}`);
    const o = m as Record<string, unknown>;
    for (const k of Object.keys(o)) if (k !== 'id' && k !== 'up') out.push(`${at}.${k}: unknown key (id, up)`);
    if (typeof o.id !== 'string' || o.id.length === 0 || o.id.length > 200 || /[\u0000-\u001f]/.test(o.id)) out.push(`${at}.id: must be a string of 1 to 200 printable characters`);
    else if (ids.has(o.id)) out.push(`${at}.id: ${JSON.stringify(o.id)} is used twice`);
    else ids.add(o.id);
    if (typeof o.up !== 'function') out.push(`${at}.up: must be a function (tx) => …`);
  });
  return out;
}

/** The declared migrations' ids in run order, without loading any file (for preview and status). */
export function declaredMigrationIds(option: MigrationsOption | undefined): string[] {
  if (option === undefined) return [];
  if (Array.isArray(option)) return option.map((m) => m.id);
  return scanMigrationDir(option).files.map((f) => f.id);
}

/** The declared migrations ready to run (a directory's `.js` files are imported here). */
export async function loadMigrations(option: MigrationsOption | undefined): Promise<RunnableMigration[]> {
  if (option === undefined) return [];
  if (Array.isArray(option)) return option.map((m) => ({ id: m.id, up: m.up }));
  const out: RunnableMigration[] = [];
  for (const f of scanMigrationDir(option).files) {
    if (f.kind === 'sql') {
      const text = readFileSync(f.file, 'utf8');
      out.push({ id: f.id, up: (tx) => tx.script(text) });
      continue;
    }
    const mod = (await import(pathToFileURL(f.file).href)) as { default?: unknown; up?: unknown };
    const up = typeof mod.default === 'function' ? mod.default : mod.up;
    if (typeof up !== 'function') throw new Error(`migration ${f.id}: ${f.file} exports no up(tx) function (export default or export function up)`);
    out.push({ id: f.id, up: up as RunnableMigration['up'] });
  }
  return out;
}

/**
 * `svc migrate status` (docs/operations.md, "Migrations"): declared ones with their state, and
 * applied ones no longer declared.
 */
export interface MigrationStatus {
  migrations: { id: string; applied: boolean; applied_at: string | null }[];
  orphaned: { id: string; applied_at: string }[];
  summary: { declared: number; applied: number; pending: number; orphaned: number };
  /** true exactly when nothing is pending or orphaned */
  ok: boolean;
}

/**
 * The status of the declared migrations given what the database has `recorded` (read by the
 * caller from its backend: appliedMigrations, src/store/sqlite/migrations-sql.ts, or
 * appliedMigrationsPg, src/store/pg/migrations-sql.ts; empty for a database not made yet).
 */
export function migrationStatus(declared: string[], recorded: AppliedMigration[]): MigrationStatus {
  const applied = new Map(recorded.map((a) => [a.id, a.applied_at]));
  const known = new Set(declared);
  const migrations = declared.map((id) => ({ id, applied: applied.has(id), applied_at: applied.get(id) ?? null }));
  const orphaned = [...applied].filter(([id]) => !known.has(id)).map(([id, at]) => ({ id, applied_at: at }));
  const done = migrations.filter((m) => m.applied).length;
  const summary = { declared: declared.length, applied: done, pending: declared.length - done, orphaned: orphaned.length };
  return { migrations, orphaned, summary, ok: summary.pending === 0 && summary.orphaned === 0 };
}

/**
 * `svc migrate preview` (docs/operations.md, "Migrations"): the compiled migrations as declared,
 * from the definition alone: no database, no deployment configuration, no callback run.
 */
export function migrationPreview(option: MigrationsOption | undefined): {
  protocol_version: 1; scope: 'compiled-consumer-migrations'; items: { id: string; kind: 'sql' | 'js' }[]; unknown: string[]; includes_system_migrations: false;
} {
  let items: { id: string; kind: 'sql' | 'js' }[] = [];
  let unknown: string[] = [];
  if (Array.isArray(option)) items = option.map((m) => ({ id: m.id, kind: 'js' as const }));
  else if (option !== undefined) {
    const scan = scanMigrationDir(option);
    items = scan.files.map((f) => ({ id: f.id, kind: f.kind }));
    unknown = scan.unknown;
  }
  return { protocol_version: 1, scope: 'compiled-consumer-migrations', items, unknown, includes_system_migrations: false };
}
