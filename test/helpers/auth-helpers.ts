/**
 * Helpers for the session, verification and rate-limit e2e suites: the auth-with-password call,
 * cookie jars, single-use token extraction from mail (log lines or raw messages) and direct
 * database access for states the API cannot create (a passwordless record, an expired token).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'libsql';
import { spawnSync } from 'node:child_process';
import { backendEnvSync, TEST_BACKEND } from './backend.js';
import type { ApiResponse, Svc } from './server.js';
import { jsonLogLines } from './server.js';
import { setCookies } from './proc.js';

/** A verification or reset token as mailed: `<15-char selector>.<43-char base64url verifier>`. */
export const MAIL_TOKEN_RE = /\b[a-z0-9]{15}\.[A-Za-z0-9_-]{43}\b/;

export const ENVELOPE_KEYS = ['status', 'code', 'message', 'data'];

/** Asserts an error envelope with status and code. */
export function assertError(r: ApiResponse, status: number, code: string, ctx: string): void {
  assert.equal(r.status, status, `${ctx}: status (body ${r.text})`);
  assert.deepEqual(Object.keys(r.body ?? {}), ENVELOPE_KEYS, `${ctx}: envelope keys`);
  assert.equal(r.body.code, code, `${ctx}: code`);
}

export function login(srv: Svc, col: string, identity: string, password: string, headers: Record<string, string> = {}): Promise<ApiResponse> {
  return srv.api('POST', `/api/collections/${col}/auth-with-password`, { body: { identity, password }, headers });
}

/** `cookie` + `x-csrf-token` headers replaying the cookies a response set. */
export function cookieHeaders(r: ApiResponse, withCsrf = true): Record<string, string> {
  const c = setCookies(r.headers);
  const auth = c.get('svc_auth')?.value;
  const csrf = c.get('svc_csrf')?.value;
  assert.ok(auth && csrf, 'response set svc_auth and svc_csrf');
  const h: Record<string, string> = { cookie: `svc_auth=${auth}; svc_csrf=${csrf}` };
  if (withCsrf) h['x-csrf-token'] = csrf;
  return h;
}

/** Waits for a `mail` log line addressed to `to` written after `mark` and returns its token. */
export async function tokenFromLog(srv: Svc, to: string, mark: number, timeoutMs = 10_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const rec of jsonLogLines(srv.stderr().slice(mark))) {
      if (rec.scope === 'mail' && typeof rec.msg === 'string' && rec.msg.includes(`to=${to} `)) {
        const m = MAIL_TOKEN_RE.exec(rec.msg);
        assert.ok(m, `mail log line carries a token: ${rec.msg}`);
        return m[0];
      }
    }
    if (Date.now() > deadline) throw new Error(`no mail log line for ${to}:\n${srv.stderr().slice(mark)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Runs `fn` on a direct connection to the server's database (busy timeout set). On the
 * server-SQL backend (SVC_TEST_BACKEND=postgres, test/helpers/backend.ts) `db` is a stand-in with
 * the part of libsql's API the tests use (`prepare(sql)` with `raw()`, `get`, `all`, `run`; `exec`),
 * each statement run on the directory's PostgreSQL database by a synchronous child process
 * (pg-sync.cjs); the SQL must then be valid in both dialects.
 */
export function withDb<T>(dataDir: string, fn: (db: InstanceType<typeof Database>) => T): T {
  const url = backendEnvSync(dataDir).SERVICE_DATABASE_URL;
  if (url) return fn(pgStandIn(url) as unknown as InstanceType<typeof Database>);
  const db = new Database(join(dataDir, 'data.db'));
  try {
    db.exec('PRAGMA busy_timeout = 5000');
    return fn(db);
  } finally {
    db.close();
  }
}

/**
 * The server's token-signing secret (base64 of 32 bytes, decoded): the file `<dataDir>/token_secret`
 * on the embedded SQLite backend; on PostgreSQL the row 'token_secret' of the table `_secrets`.
 */
export function tokenSecret(dataDir: string): Buffer {
  if (TEST_BACKEND !== 'postgres') return Buffer.from(readFileSync(join(dataDir, 'token_secret'), 'utf8').trim(), 'base64');
  const row = withDb(dataDir, (db) => db.prepare('SELECT "value" FROM "_secrets" WHERE "name" = ?').raw(true).get(['token_secret']) as unknown[] | undefined);
  assert.ok(row, 'the _secrets table holds token_secret');
  return Buffer.from(String(row[0]).trim(), 'base64');
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Median of numbers. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** A synchronous libsql-like handle on a PostgreSQL database (see withDb). */
function pgStandIn(url: string) {
  const run = (sql: string, params: unknown[], raw: boolean): { rows: unknown[]; changes: number } => {
    const r = spawnSync(process.execPath, [join(import.meta.dirname, 'pg-sync.cjs')], { input: JSON.stringify({ url, sql, params, raw }), encoding: 'utf8', timeout: 30_000 });
    const out = JSON.parse(r.stdout || '{"error":"no answer"}') as { rows: unknown[]; changes: number; error?: string };
    if (out.error) throw new Error(`${out.error} (in: ${sql})`);
    return out;
  };
  const args = (p: unknown[]): unknown[] => (p.length === 1 && Array.isArray(p[0]) ? p[0] : p);
  const prepare = (sql: string) => {
    let raw = false;
    const stmt = {
      raw(on = true) {
        raw = on;
        return stmt;
      },
      get: (...p: unknown[]) => run(sql, args(p), raw).rows[0],
      all: (...p: unknown[]) => run(sql, args(p), raw).rows,
      run: (...p: unknown[]) => ({ changes: run(sql, args(p), raw).changes }),
    };
    return stmt;
  };
  return { prepare, exec: (sql: string) => void run(sql, [], false) };
}
