/**
 * The PostgreSQL statement stores of settings, mail, uploads, record files and the schema
 * (src/store/shared/{settings,mail,upload}-sql.ts with their PostgreSQL dialects,
 * src/store/pg/{file,schema}-sql.ts) against a real PostgreSQL
 * (test/helpers/postgres.ts), bootstrapped with src/store/pg/bootstrap.ts through a PgWriter and
 * read through a PgReader. Each scenario runs the same calls on the SQLite stores over a libsql
 * database (WriterClient + Reader) and asserts both backends hand the domain the same values
 * (differential), besides the expected values themselves.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startPostgres, postgresSkipReason, type Postgres } from '../../helpers/postgres.js';
import type { Collection, Field } from '../../../src/model/schema.js';
import type { StepResult, WriteStep } from '../../../src/store/write-job.js';
import type { SqlValue } from '../../../src/store/bind.js';
import { bindValue } from '../../../src/store/bind.js';
import type { SettingsRowStore } from '../../../src/store/settings-store.js';
import type { MailRowStore, SenderRow } from '../../../src/store/mail-store.js';
import { UPLOAD_PAGE_BYTES, type UploadRowStore } from '../../../src/store/upload-store.js';
import type { FileStore, RowGet } from '../../../src/store/file-store.js';
import type { SchemaStore } from '../../../src/store/schema-store.js';
import { PgWriter } from '../../../src/store/pg/writer.js';
import { PgReader } from '../../../src/store/pg/reader.js';
import { bootstrapSteps as pgBootstrap } from '../../../src/store/pg/bootstrap.js';
import { SettingsSql, SETTINGS_DIALECTS } from '../../../src/store/shared/settings-sql.js';
import { MailSql, MAIL_DIALECTS } from '../../../src/store/shared/mail-sql.js';
import { UploadSql, UPLOAD_DIALECTS } from '../../../src/store/shared/upload-sql.js';
import { UPLOAD_DDL as PG_UPLOAD_DDL } from '../../../src/store/pg/upload-sql.js';
import { PgFileSql } from '../../../src/store/pg/file-sql.js';
import { PgSchemaSql } from '../../../src/store/pg/schema-sql.js';
import { WriterClient } from '../../../src/store/sqlite/writer-client.js';
import { Reader } from '../../../src/store/sqlite/reader.js';
import { bootstrapSteps as sqliteBootstrap } from '../../../src/store/sqlite/bootstrap.js';
import { UPLOAD_DDL as SQLITE_UPLOAD_DDL } from '../../../src/store/sqlite/upload-sql.js';
import { SqliteFileSql } from '../../../src/store/sqlite/file-sql.js';
import { SqliteSchemaSql } from '../../../src/store/sqlite/schema-sql.js';
import { knownApiError } from '../../../src/errors/api-error.js';

const skip = postgresSkipReason() ?? false;

/** One backend as the domain sees it: a writer, a point read, and the five stores. */
interface Backend {
  name: 'pg' | 'sqlite';
  write(steps: WriteStep[]): Promise<StepResult[]>;
  get: RowGet;
  all(sql: string, params: SqlValue[]): Promise<unknown[][]>;
  settings: SettingsRowStore;
  mail: MailRowStore;
  uploads: UploadRowStore;
  files: FileStore;
  schema: SchemaStore;
}

/** A rejected write as the domain sees it (guard failures carry status and code). */
async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    // a failed guard rejects with GuardFailed (src/store/errors.ts): compare it as the API answers it
    const e = (knownApiError(err) ?? err) as { status?: number; code?: string; name?: string };
    return e.status !== undefined ? `${e.status} ${e.code}` : `error ${e.name}`;
  }
}

const T0 = '2024-01-02 03:04:05.678Z';
const T1 = '2024-01-02 03:04:06.000Z';
const T2 = '2024-01-02 03:04:07.000Z';
const notFound = { status: 404, code: 'not_found', message: 'no such thing' };
const gone = { status: 409, code: 'conflict', message: 'changed' };

const field = (id: string, name: string, type: Field['type'], options: Field['options'] = {}): Field => ({ id, name, type, options });
const coll = (id: string, name: string, fields: Field[]): Collection => ({
  id, name, type: 'base', system: false, fields, indexes: [], options: {},
  listRule: null, viewRule: null, createRule: null, updateRule: null, deleteRule: null, created: T0, updated: T0,
});

describe('PostgreSQL settings, mail, upload, file and schema stores', { skip }, () => {
  let server: Postgres;
  let pgUrl: string;
  let pgWriter: PgWriter;
  let pgReader: PgReader;
  let admin: pg.Client;
  let dir: string;
  let sqWriter: WriterClient;
  let sqReader: Reader;
  const backends: Backend[] = [];

  before(async () => {
    server = await startPostgres();
    pgUrl = await server.createDatabase('stores');
    pgWriter = await PgWriter.start(pgUrl);
    await pgWriter.write(pgBootstrap());
    pgReader = await PgReader.start(pgUrl);
    admin = new pg.Client({ connectionString: pgUrl });
    await admin.connect();
    dir = mkdtempSync(join(tmpdir(), 'svc-other-stores-'));
    const path = join(dir, 'data.db');
    sqWriter = await WriterClient.start(path);
    await sqWriter.write(sqliteBootstrap().map((s) => ({ ...s, params: s.params.map(bindValue) })));
    sqReader = new Reader(path, 1);
    backends.push({
      name: 'pg',
      write: (steps) => pgWriter.write(steps),
      get: (sql, params) => pgReader.get(sql, params),
      all: (sql, params) => pgReader.all(sql, params),
      settings: new SettingsSql(pgReader, SETTINGS_DIALECTS.postgres),
      mail: new MailSql(pgReader, MAIL_DIALECTS.postgres),
      uploads: new UploadSql(pgReader, UPLOAD_DIALECTS.postgres, PG_UPLOAD_DDL),
      files: new PgFileSql(pgReader),
      schema: new PgSchemaSql(pgReader),
    });
    backends.push({
      name: 'sqlite',
      write: async (steps) => {
        try {
          return await sqWriter.write(steps);
        } finally {
          sqReader.endSnapshot();
        }
      },
      get: (sql, params) => sqReader.get(sql, params),
      all: (sql, params) => sqReader.all(sql, params),
      settings: new SettingsSql(sqReader, SETTINGS_DIALECTS.sqlite),
      mail: new MailSql(sqReader, MAIL_DIALECTS.sqlite),
      uploads: new UploadSql(sqReader, UPLOAD_DIALECTS.sqlite, SQLITE_UPLOAD_DDL),
      files: new SqliteFileSql(sqReader),
      schema: new SqliteSchemaSql(sqReader),
    });
  });

  after(async () => {
    await pgWriter?.close().catch(() => undefined);
    await pgReader?.close().catch(() => undefined);
    await admin?.end().catch(() => undefined);
    await sqWriter?.close().catch(() => undefined);
    await sqReader?.close().catch(() => undefined);
    if (dir) rmSync(dir, { recursive: true, force: true });
    await server?.stop();
  });

  /** Runs `scenario` on both backends; asserts equal observations and returns PostgreSQL's. */
  async function differential<T>(scenario: (b: Backend) => Promise<T>): Promise<T> {
    const [p, s] = [await scenario(backends[0]), await scenario(backends[1])];
    assert.deepEqual(p, s, 'PostgreSQL and SQLite stores differ');
    return p;
  }

  test('settings: upsert keeps created, delete guards, sticky assignments (first wins)', async () => {
    const seen = await differential(async (b) => {
      const out: Record<string, unknown> = {};
      await b.write([b.settings.putStep('zeta', '1', T0)]);
      await b.write([b.settings.putStep('Alpha', '{"a":1}', T0)]);
      await b.write([b.settings.putStep('alpha', 'x', T0)]);
      await b.write([b.settings.putStep('zeta', '2', T1)]);
      out.all = await b.settings.all();
      out.delete = await outcome(b.write([b.settings.deleteStep('alpha', notFound)]));
      out.deleteMissing = await outcome(b.write([b.settings.deleteStep('alpha', notFound)]));
      out.after = await b.settings.all();
      out.none = (await b.settings.assignment('exp', 'user1'));
      await b.write([b.settings.assignStep('exp', 'user1', 'A', T0)]);
      await b.write([b.settings.assignStep('exp', 'user1', 'B', T1)]);
      await b.write([b.settings.assignStep('exp', 'user2', 'B', T1)]);
      out.user1 = (await b.settings.assignment('exp', 'user1'));
      out.user2 = (await b.settings.assignment('exp', 'user2'));
      out.other = (await b.settings.assignment('exp2', 'user1'));
      return out;
    });
    assert.deepEqual(seen.all, [
      { key: 'Alpha', value: '{"a":1}', created: T0, updated: T0 },
      { key: 'alpha', value: 'x', created: T0, updated: T0 },
      { key: 'zeta', value: '2', created: T0, updated: T1 },
    ]);
    assert.equal(seen.delete, 'ok');
    assert.equal(seen.deleteMissing, '404 not_found');
    assert.deepEqual((seen.after as Array<{ key: string }>).map((s) => s.key), ['Alpha', 'zeta']);
    assert.equal(seen.none, undefined);
    assert.equal(seen.user1, 'A');
    assert.equal(seen.user2, 'B');
    assert.equal(seen.other, undefined);
  });

  test('mail queue: enqueue, due order and limit, retry, give up, deliver, counts', async () => {
    const seen = await differential(async (b) => {
      const out: Record<string, unknown> = {};
      out.empty = [(await b.mail.nextDue()), (await b.mail.counts()), (await b.mail.due(10_000, 10))];
      await b.write([b.mail.enqueueStep('m1', 'default', '{"to":"a@b.c"}', '', 1000)]);
      await b.write([b.mail.enqueueStep('m0', 'default', '{"to":"d@e.f"}', 'acc1', 1000)]);
      await b.write([b.mail.enqueueStep('m3', 'bulk', '{"to":"g@h.i"}', '', 2000)]);
      out.due1500 = (await b.mail.due(1500, 10));
      out.dueLimit = (await b.mail.due(5000, 2)).map((m) => m.id);
      out.next = (await b.mail.nextDue());
      await b.write([b.mail.failedStep('m1', 1, 'boom', 5000, 1600)]);
      out.afterRetry = [(await b.mail.due(1600, 10)).map((m) => m.id), (await b.mail.nextDue()), (await b.mail.counts())];
      await b.write([b.mail.failedStep('m0', 3, 'x'.repeat(1500), null, 1700)]);
      out.afterGiveUp = [(await b.mail.due(1_000_000, 10)).map((m) => [m.id, m.attempts]), (await b.mail.counts())];
      await b.write([b.mail.deliveredStep('m3')]);
      out.afterDeliver = [(await b.mail.nextDue()), (await b.mail.counts())];
      out.rows = (await b.all('SELECT "id","status","attempts","next_at","last_error","created","updated" FROM "_mailQueue" ORDER BY "id"', []))
        .map((r) => r.map((v) => (typeof v === 'string' && v.length > 100 ? v.length : typeof v === 'bigint' ? Number(v) : v)));
      return out;
    });
    assert.deepEqual(seen.empty, [undefined, { pending: 0, failed: 0 }, []]);
    assert.deepEqual(seen.due1500, [
      { id: 'm1', queue: 'default', message: '{"to":"a@b.c"}', attempts: 0, account: '' },
      { id: 'm0', queue: 'default', message: '{"to":"d@e.f"}', attempts: 0, account: 'acc1' },
    ]);
    assert.deepEqual(seen.dueLimit, ['m1', 'm0']);
    assert.equal(seen.next, 1000);
    assert.deepEqual(seen.afterRetry, [['m0'], 1000, { pending: 3, failed: 0 }]);
    assert.deepEqual(seen.afterGiveUp, [[['m3', 0], ['m1', 1]], { pending: 2, failed: 1 }]);
    assert.deepEqual(seen.afterDeliver, [5000, { pending: 1, failed: 1 }]);
    assert.deepEqual(seen.rows, [['m0', 'failed', 3, 1700, 1000, 1000, 1700], ['m1', 'pending', 1, 5000, 'boom', 1000, 1600]]);
  });

  test('mail suppressions compare addresses case-insensitively, globally or per account', async () => {
    const seen = await differential(async (b) => {
      const out: Record<string, unknown> = {};
      out.before = (await b.mail.suppressed('bob@example.com', ''));
      await b.write([b.mail.suppressStep('Bob@Example.com', '', 'bounce', T0)]);
      await b.write([b.mail.suppressStep('carol@example.com', 'acc1', 'complaint', T0)]);
      await b.write([b.mail.suppressStep('CAROL@example.com', 'acc1', 'bounce', T1)]);
      out.checks = [
        (await b.mail.suppressed('bob@example.com', '')), (await b.mail.suppressed('BOB@EXAMPLE.COM', 'acc9')),
        (await b.mail.suppressed('carol@EXAMPLE.com', 'acc1')), (await b.mail.suppressed('carol@example.com', 'acc2')), (await b.mail.suppressed('carol@example.com', '')),
      ];
      out.rows = (await b.all('SELECT "email","account","reason","created","updated" FROM "_suppressions" ORDER BY "account", "email"', []));
      return out;
    });
    assert.equal(seen.before, false);
    assert.deepEqual(seen.checks, [true, true, true, false, false]);
    assert.deepEqual(seen.rows, [['Bob@Example.com', '', 'bounce', T0, T0], ['carol@example.com', 'acc1', 'bounce', T0, T1]]);
  });

  test('mail sender identities: create, refresh while pending, verify guarded on the token, look-ups', async () => {
    const seen = await differential(async (b) => {
      const out: Record<string, unknown> = {};
      const row = (id: string, email: string, tokenHash: string, sentAt: number): SenderRow =>
        ({ id, account: 'acc1', email, status: 'pending', verified_at: null, tokenHash, sentAt });
      await b.write([b.mail.putSenderStep(row('s1', 'Me@Site.org', 'h1', 100), T0)]);
      await b.write([b.mail.putSenderStep({ ...row('s9', 'me@site.org', 'h9', 900), account: 'acc2' }, T0)]);
      await b.write([b.mail.putSenderStep(row('s2', 'ME@site.ORG', 'h2', 200), T1)]); // refresh: same identity
      out.refreshed = (await b.mail.sender('acc1', 'me@SITE.org'));
      out.wrongToken = await outcome(b.write([b.mail.verifySenderStep('s1', 'h1', T2, notFound)]));
      out.verify = await outcome(b.write([b.mail.verifySenderStep('s1', 'h2', T2, notFound)]));
      out.again = await outcome(b.write([b.mail.verifySenderStep('s1', 'h2', T2, notFound)]));
      await b.write([b.mail.putSenderStep(row('s3', 'me@site.org', 'h3', 300), T2)]); // verified: left alone
      await b.write([b.mail.putSenderStep(row('s4', 'other@site.org', 'h4', 400), T0)]);
      out.byId = [(await b.mail.senderById('s1')), (await b.mail.senderById('s2')), (await b.mail.senderById('s9'))?.account];
      out.list = (await b.mail.senders('acc1'));
      out.none = [(await b.mail.sender('acc3', 'me@site.org')), (await b.mail.senders('acc3'))];
      return out;
    });
    assert.deepEqual(seen.refreshed, { id: 's1', account: 'acc1', email: 'Me@Site.org', status: 'pending', verified_at: null, tokenHash: 'h2', sentAt: 200 });
    assert.deepEqual([seen.wrongToken, seen.verify, seen.again], ['404 not_found', 'ok', '404 not_found']);
    const verified = { id: 's1', account: 'acc1', email: 'Me@Site.org', status: 'verified', verified_at: T2, tokenHash: null, sentAt: 200 };
    assert.deepEqual(seen.byId, [verified, undefined, 'acc2']);
    assert.deepEqual(seen.list, [verified, { id: 's4', account: 'acc1', email: 'other@site.org', status: 'pending', verified_at: null, tokenHash: 'h4', sentAt: 400 }]);
    assert.deepEqual(seen.none, [undefined, []]);
  });

  test('upload store: schema state, sessions, zero pages, chunks and offsets, states, receipts, deletes', async () => {
    const id = 'A'.repeat(32);
    const id2 = 'B'.repeat(32);
    const len = 2 * UPLOAD_PAGE_BYTES + UPLOAD_PAGE_BYTES / 2;
    const meta = (sid: string, length: number, created: number) => ({
      id: sid, principalCollection: '_pb_users_auth_', principalId: 'abcdefghijklmno', collectionId: 'posts_col', recordId: 'pqrstuvwxyz0123',
      fieldId: 'file_field', filename: 'big.bin', mimetype: 'application/octet-stream', length, created, expires: created + 3_600_000,
    });
    const chunk = Buffer.alloc(UPLOAD_PAGE_BYTES + 1000);
    for (let i = 0; i < chunk.length; i++) chunk[i] = (i * 7 + 3) & 0xff;
    const seen = await differential(async (b) => {
      const out: Record<string, unknown> = {};
      const u = b.uploads;
      out.absent = await u.schemaState();
      await b.write([u.createSteps('{}')[0]]);
      out.partial = await u.schemaState();
      await b.write([{ sql: 'DROP TABLE "_uploadStore"', params: [] }]);
      out.absentAgain = (await u.schemaState()).kind;
      await b.write(u.createSteps('{"max_sessions":3}'));
      out.present = await u.schemaState();
      await b.write([u.budgetsStep('{"max_sessions":4}')]);
      out.budgets = await u.schemaState();
      out.noSessions = [(await u.sessions()), (await u.pageSizes(id)), (await u.page(id, 0)), (await u.orphanPayloads()), u.deleteSteps([])];

      await b.write(u.insertSteps(meta(id, len, 1_700_000_000_000)));
      await b.write(u.insertSteps(meta(id2, 10, 1_700_000_000_001)));
      out.sessions = await u.sessions();
      out.pages = [(await u.pageSizes(id)), (await u.pageSizes(id2))];
      const zero = (await u.page(id, 0))!;
      out.zero = [zero.length, zero.every((x) => x === 0), (await u.page(id, 2))!.length, (await u.page(id, 3))];

      // a chunk of page 0 and part of page 1, then the offset moves 0 → len of chunk
      const page0 = Buffer.from(chunk.subarray(0, UPLOAD_PAGE_BYTES));
      const page1 = Buffer.alloc(UPLOAD_PAGE_BYTES);
      chunk.copy(page1, 0, UPLOAD_PAGE_BYTES);
      out.append = await outcome(b.write(u.appendSteps(id, 0, chunk.length, [[0, page0], [1, page1]])));
      out.stale = await outcome(b.write(u.appendSteps(id, 0, 5, [[0, page0]])));
      out.badLength = await outcome(b.write(u.appendSteps(id, chunk.length, chunk.length + 10, [[2, Buffer.alloc(10)]])));
      out.offset = (await u.sessions()).map((s) => [s.id, s.offset, s.state]);
      out.page0 = (await u.page(id, 0))!.equals(page0);
      out.page1 = (await u.page(id, 1))!.equals(page1);

      out.toCommitting = await outcome(b.write(u.stateSteps(id, 'receiving', 'committing', false)));
      out.wrongFrom = await outcome(b.write(u.stateSteps(id, 'receiving', 'failed', true)));
      out.appendCommitting = await outcome(b.write(u.appendSteps(id, chunk.length, chunk.length + 1, [])));
      out.pagesKept = (await u.pageSizes(id)).length;
      out.receipt = await outcome(b.write(u.stateSteps(id, 'committing', 'completed', true)));
      out.afterReceipt = [(await u.pageSizes(id)), (await u.sessions()).map((s) => [s.id, s.state])];

      // a payload without its session
      await b.write([{ sql: 'INSERT INTO "_uploadPayloads" ("session", "page", "data") VALUES ($1, $2, $3)', params: ['orphan', 0, Buffer.from([1, 2, 3])] }]);
      out.orphans = await u.orphanPayloads();
      await b.write(u.deleteSteps([...(await u.orphanPayloads()), id2]));
      out.afterDelete = [(await u.orphanPayloads()), (await u.sessions()).map((s) => s.id), (await u.pageSizes(id2))];
      return out;
    });
    assert.deepEqual(seen.absent, { kind: 'absent' });
    assert.deepEqual(seen.partial, { kind: 'partial', tables: ['_uploadStore'] });
    assert.equal(seen.absentAgain, 'absent');
    assert.deepEqual(seen.present, { kind: 'present', settings: new Map([['version', '2'], ['budgets', '{"max_sessions":3}']]) });
    assert.deepEqual(seen.budgets, { kind: 'present', settings: new Map([['version', '2'], ['budgets', '{"max_sessions":4}']]) });
    assert.deepEqual(seen.noSessions, [[], [], undefined, [], []]);
    const sessions = seen.sessions as Array<Record<string, unknown>>;
    assert.deepEqual(sessions.map((s) => [s.id, s.length, s.offset, s.created, s.state]), [
      [id, BigInt(len), 0n, 1_700_000_000_000n, 'receiving'], [id2, 10n, 0n, 1_700_000_000_001n, 'receiving'],
    ]);
    assert.deepEqual(seen.pages, [[[0, UPLOAD_PAGE_BYTES], [1, UPLOAD_PAGE_BYTES], [2, UPLOAD_PAGE_BYTES / 2]], [[0, 10]]]);
    assert.deepEqual(seen.zero, [UPLOAD_PAGE_BYTES, true, UPLOAD_PAGE_BYTES / 2, undefined]);
    assert.deepEqual([seen.append, seen.stale, seen.badLength], ['ok', '503 internal', '503 internal']);
    assert.deepEqual(seen.offset, [[id, BigInt(chunk.length), 'receiving'], [id2, 0n, 'receiving']]);
    assert.deepEqual([seen.page0, seen.page1], [true, true]);
    assert.deepEqual([seen.toCommitting, seen.wrongFrom, seen.appendCommitting, seen.pagesKept, seen.receipt], ['ok', '503 internal', '503 internal', 3, 'ok']);
    assert.deepEqual(seen.afterReceipt, [[], [[id, 'completed'], [id2, 'receiving']]]);
    assert.deepEqual(seen.orphans, ['orphan']);
    assert.deepEqual(seen.afterDelete, [[], [id], []]);
  });

  test('zero pages: the PostgreSQL expression gives n zero bytes, stored as bytea', async () => {
    for (const n of [1, 10, UPLOAD_PAGE_BYTES]) {
      const r = (await pgReader.get(`SELECT ${UPLOAD_DIALECTS.postgres.zeroBytes(1)}`, [n]))!;
      assert.ok(Buffer.isBuffer(r[0]));
      assert.equal((r[0] as Buffer).length, n);
      assert.ok((r[0] as Buffer).every((x) => x === 0));
    }
    const { rows } = await admin.query(`SELECT format_type(a.atttypid, a.atttypmod) AS t FROM pg_attribute a WHERE a.attrelid = '"_uploadPayloads"'::regclass AND a.attname = 'data'`);
    assert.equal(rows[0].t, 'bytea');
  });

  // ---- schema and record files ----

  const single = field('f_avatar', 'avatar', 'file');
  const multi = field('f_docs', 'docs', 'file', { maxSelect: 5 });
  const title = field('f_title', 'title', 'text');
  const posts = coll('c_posts', 'posts', [title, single, multi]);

  test('schema store: load all, create, update (renames keep data), delete through DDL jobs', async () => {
    const seen = await differential(async (b) => {
      const out: Record<string, unknown> = {};
      // the system collection's times are those of each database's bootstrap
      const byId = (cs: Collection[]) => [...cs].sort((x, y) => (x.id < y.id ? -1 : 1)).map((c) => (c.system ? { ...c, created: '', updated: '' } : c));
      out.initial = byId(await b.schema.loadAll());
      const base = await b.schema.loadAll();
      const afterCreate = [...base, posts];
      await b.write(b.schema.createSteps(posts, base, afterCreate));
      await b.write([{ sql: 'INSERT INTO "posts" ("id","created","updated","title","avatar","docs") VALUES ($1,$2,$3,$4,$5,$6)', params: ['r1', T0, T0, 'Hello', 'a_1.png', '["d_1.pdf","d_2.pdf"]'] }]);
      out.created = byId(await b.schema.loadAll());
      const next: Collection = {
        ...posts, name: 'articles', updated: T1,
        fields: [field('f_title', 'headline', 'text'), single, multi, field('f_views', 'views', 'number')],
      };
      await b.write(b.schema.updateSteps(posts, next, afterCreate, [...base, next]));
      out.updated = byId(await b.schema.loadAll());
      out.data = (await b.get('SELECT "headline","avatar","views" FROM "articles" WHERE "id" = $1', ['r1']));
      await b.write(b.schema.deleteSteps(next, [...base, next], base));
      out.deleted = byId(await b.schema.loadAll());
      out.tableGone = (await outcome(Promise.resolve().then(() => b.get('SELECT 1 FROM "articles"', [])))).startsWith('error');
      return out;
    });
    assert.deepEqual((seen.initial as Collection[]).map((c) => [c.name, c.system]), [['_superusers', true]]);
    assert.deepEqual((seen.created as Collection[]).find((c) => c.id === 'c_posts'), posts);
    const upd = (seen.updated as Collection[]).find((c) => c.id === 'c_posts')!;
    assert.deepEqual([upd.name, upd.updated, upd.fields.map((f) => f.name)], ['articles', T1, ['headline', 'avatar', 'docs', 'views']]);
    assert.deepEqual(seen.data, ['Hello', 'a_1.png', null]);
    assert.deepEqual(seen.deleted, seen.initial);
    assert.equal(seen.tableGone, true);
  });

  test('schema store: loadAll answers collections in creation order on PostgreSQL', async () => {
    const pgb = backends[0];
    const base = await pgb.schema.loadAll();
    const a = { ...coll('c_order_b', 'order_b', [title]), created: '2999-02-01 00:00:00.000Z' };
    const z = { ...coll('c_order_a', 'order_a', [title]), created: '2999-03-01 00:00:00.000Z' };
    await pgb.write(pgb.schema.createSteps(z, base, [...base, z]));
    await pgb.write(pgb.schema.createSteps(a, [...base, z], [...base, z, a]));
    assert.deepEqual((await pgb.schema.loadAll()).map((c) => c.id).slice(-2), ['c_order_b', 'c_order_a']);
    await pgb.write(pgb.schema.deleteSteps(a, [...base, z, a], [...base, z]));
    await pgb.write(pgb.schema.deleteSteps(z, [...base, z], base));
    assert.deepEqual(await pgb.schema.loadAll(), base);
  });

  test('file store: stored names read back as on SQLite, guard on concurrent change, referenced rows', async () => {
    let rawPg: unknown;
    const seen = await differential(async (b) => {
      const out: Record<string, unknown> = {};
      const base = await b.schema.loadAll();
      await b.write(b.schema.createSteps(posts, base, [...base, posts]));
      const insert = 'INSERT INTO "posts" ("id","created","updated","title","avatar","docs") VALUES ($1,$2,$3,$4,$5,$6)';
      await b.write([{ sql: insert, params: ['r1', T0, T0, 'one', 'a_1.png', '["d_1.pdf","d é_2.pdf"]'] }]);
      await b.write([{ sql: insert, params: ['r2', T0, T0, 'two', null, null] }]);
      await b.write([{ sql: insert, params: ['r3', T0, T0, 'three', '', '[]'] }]);
      const names = ['avatar', 'docs'];
      if (b.name === 'pg') rawPg = (await b.get('SELECT "docs" FROM "posts" WHERE "id" = $1', ['r1']))?.[0];
      out.values = await Promise.all(['r1', 'r2', 'r3', 'nope'].map((id) => b.files.values(b.get, posts, names, id)));
      out.onlyDocs = await b.files.values(b.get, posts, ['docs'], 'r1');
      out.referenced = (await b.files.referenced(posts, names, ['r3', 'r1', 'nope', 'r2'])).sort((x, y) => String(x[0]).localeCompare(String(y[0])));
      out.referencedIds = await b.files.referenced(posts, [], ['r1']);

      const current = async (id: string) => {
        const row = (await b.files.values(b.get, posts, names, id))!;
        return new Map<string, SqlValue>(names.map((n, i) => [n, row[i] as SqlValue]));
      };
      const r1 = await current('r1');
      const r2 = await current('r2');
      out.unchanged = [
        await outcome(b.write([b.files.unchangedGuardStep(posts, 'r1', r1, gone)])),
        await outcome(b.write([b.files.unchangedGuardStep(posts, 'r2', r2, gone)])),
        await outcome(b.write([b.files.unchangedGuardStep(posts, 'nope', r1, gone)])),
        await outcome(b.write([b.files.unchangedGuardStep(posts, 'r1', new Map([['avatar', 'a_1.png']]), gone)])),
      ];
      await b.write([{ sql: 'UPDATE "posts" SET "docs" = $1 WHERE "id" = $2', params: ['["d_1.pdf"]', 'r1'] }]);
      await b.write([{ sql: 'UPDATE "posts" SET "avatar" = $1 WHERE "id" = $2', params: ['a_9.png', 'r2'] }]);
      out.changed = [
        await outcome(b.write([b.files.unchangedGuardStep(posts, 'r1', r1, gone)])),
        await outcome(b.write([b.files.unchangedGuardStep(posts, 'r2', r2, gone)])),
        await outcome(b.write([b.files.unchangedGuardStep(posts, 'r1', new Map([['avatar', 'a_1.png']]), gone)])),
      ];
      await b.write(b.schema.deleteSteps(posts, [...base, posts], base));
      return out;
    });
    assert.deepEqual(seen.values, [['a_1.png', '["d_1.pdf","d é_2.pdf"]'], [null, null], ['', '[]'], undefined]);
    assert.deepEqual(seen.onlyDocs, ['["d_1.pdf","d é_2.pdf"]']);
    assert.deepEqual(seen.referenced, [['r1', 'a_1.png', '["d_1.pdf","d é_2.pdf"]'], ['r2', null, null], ['r3', '', '[]']]);
    assert.deepEqual(seen.referencedIds, [['r1']]);
    assert.deepEqual(seen.unchanged, ['ok', 'ok', 'ok', 'ok']);
    assert.deepEqual(seen.changed, ['409 conflict', '409 conflict', 'ok']);
    // PostgreSQL prints the jsonb column with spaces; the store hands back the codec's compact text
    assert.equal(rawPg, '["d_1.pdf", "d é_2.pdf"]');
  });
});
