/**
 * The PostgreSQL schema: system tables (src/store/pg/bootstrap.ts) and record-table
 * DDL (src/store/pg/collection-sql.ts, column-types.ts), run for real against a throw-away
 * PostgreSQL (test/helpers/postgres.ts): idempotent bootstrap, every field type stored as the
 * codecs store it, unique and composite indexes, ALTERs that keep data, relation integrity
 * (foreign keys and the PL/pgSQL triggers of multi-valued relations), renames and drops,
 * full-text search through the tsvector column, and the pgvector-unavailable path.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startPostgres, postgresSkipReason, type Postgres } from '../../helpers/postgres.js';
import type { Collection, Field, IndexDef } from '../../../src/model/schema.js';
import type { WriteStep } from '../../../src/store/write-job.js';
import { encodeValue } from '../../../src/collections/fields/index.js';
import {
  createSteps, updateSteps, deleteSteps, ftsMatchSql, ftsRankSql, indexSqlName, createdIndexName, pgName, vectorWarning, relationFunctionNames,
} from '../../../src/store/pg/collection-sql.js';
import { bootstrapSteps, ensureVectorExtension, VECTOR_FUNCTION_SQL, VECTOR_UNAVAILABLE_WARNING } from '../../../src/store/pg/bootstrap.js';
import { pgColumnType, storedTextSql } from '../../../src/store/pg/column-types.js';
import { lowerTsquery } from '../../../src/records/search.js';

const skip = postgresSkipReason() ?? false;

/** `?` slots → `$n` (the statements here have no `?` anywhere else; asserted below). */
function toPg(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

const T = '2024-01-02 03:04:05.678Z';

function field(id: string, name: string, type: Field['type'], options: Field['options'] = {}): Field {
  return { id, name, type, options };
}

function coll(id: string, name: string, fields: Field[], indexes: IndexDef[] = [], type: Collection['type'] = 'base'): Collection {
  return {
    id, name, type, system: false, fields, indexes, options: {},
    listRule: null, viewRule: null, createRule: null, updateRule: null, deleteRule: null, created: T, updated: T,
  };
}

describe('PostgreSQL schema', { skip }, () => {
  let server: Postgres;
  let db: pg.Client;
  /** the schema as the collections service would hold it */
  let schema: Collection[] = [];

  async function run(steps: WriteStep[]): Promise<void> {
    for (const s of steps) if (s.params.length === 0) assert.ok(!s.sql.includes('?'), `a DDL step has a "?": ${s.sql}`);
    await db.query('BEGIN');
    try {
      for (const s of steps) await db.query(toPg(s.sql), s.params as unknown[]);
      await db.query('COMMIT');
    } catch (err) {
      await db.query('ROLLBACK');
      throw err;
    }
  }

  async function create(c: Collection): Promise<void> {
    const before = schema;
    schema = [...schema, c];
    await run(createSteps(c, before, schema));
  }

  async function update(next: Collection): Promise<void> {
    const before = schema;
    const prev = before.find((x) => x.id === next.id)!;
    schema = before.map((x) => (x.id === next.id ? next : x));
    await run(updateSteps(prev, next, before, schema));
  }

  async function drop(c: Collection): Promise<void> {
    const before = schema;
    schema = before.filter((x) => x.id !== c.id);
    await run(deleteSteps(c, before, schema));
  }

  /**
   * Inserts a record with values encoded by the field codecs, every field as on a create (record
   * ids are 15 characters of [a-z0-9], so the ids here are padded with `z`).
   */
  async function insert(c: Collection, id: string, body: Record<string, unknown>): Promise<void> {
    const cols = ['"id"', '"created"', '"updated"'];
    const vals: unknown[] = [id, T, T];
    for (const f of c.fields) {
      const r = encodeValue(f, body[f.name], 'create');
      if ('error' in r) throw new Error(`${f.name}: ${r.error.message}`);
      cols.push(`"${f.name}"`);
      vals.push(r.value);
    }
    await db.query(`INSERT INTO "${c.name}" (${cols.join(', ')}) VALUES (${vals.map((_, i) => `$${i + 1}`).join(', ')})`, vals);
  }

  async function rows(sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
    return (await db.query(sql, params)).rows as Record<string, unknown>[];
  }

  async function columnTypes(table: string): Promise<Record<string, string>> {
    const r = await rows(`SELECT column_name, data_type FROM information_schema.columns WHERE table_name = $1`, [table]);
    return Object.fromEntries(r.map((x) => [x.column_name, x.data_type]));
  }

  async function pgCode(p: Promise<unknown>): Promise<string> {
    try {
      await p;
    } catch (err) {
      return String((err as { code?: string }).code);
    }
    return 'no error';
  }

  before(async () => {
    server = await startPostgres();
    db = new pg.Client({ connectionString: await server.createDatabase('schema_test') });
    await db.connect();
  });

  after(async () => {
    await db?.end().catch(() => undefined);
    await server?.stop();
  });

  test('bootstrap creates the system tables and is idempotent', async () => {
    await run(bootstrapSteps());
    await run(bootstrapSteps());
    const tables = (await rows(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`)).map((r) => r.table_name);
    for (const t of ['_collections', '_superusers', '_sessions', '_authTokens', '_externalAuths', '_passkeys', '_totpFactors',
      '_recoveryCodes', '_mfaAttempts', '_mfaTries', '_settings', '_assignments', '_mailQueue', '_suppressions', '_senders',
      '_cursorStates', '_migrations']) {
      assert.ok(tables.includes(t), `missing ${t}`);
    }
    assert.deepEqual((await rows(`SELECT "name", "system" FROM "_collections"`)), [{ name: '_superusers', system: 1 }]);
    const su = await columnTypes('_superusers');
    assert.equal(su._rowid, 'bigint');
    assert.equal(su.verified, 'smallint');
    assert.equal((await columnTypes('_authTokens')).expires, 'bigint');
    // NOCASE keys: lower() unique indexes
    await db.query(`INSERT INTO "_superusers" ("id","created","updated","email","tokenKey") VALUES ('s1',$1,$1,'Root@Example.com','k')`, [T]);
    assert.equal(await pgCode(db.query(`INSERT INTO "_superusers" ("id","created","updated","email","tokenKey") VALUES ('s2',$1,$1,'root@example.COM','k')`, [T])), '23505');
    assert.equal(await pgCode(db.query(`INSERT INTO "_collections" ("id","name","type","fields","indexes","options","created","updated") VALUES ('x','_SUPERUSERS','base','[]','[]','{}','','')`)), '23505');
    await db.query(`INSERT INTO "_suppressions" ("email","reason","created","updated") VALUES ('A@b.c','bounce','','')`);
    assert.equal(await pgCode(db.query(`INSERT INTO "_suppressions" ("email","reason","created","updated") VALUES ('a@B.c','bounce','','')`)), '23505');
  });

  const kinds = coll('c_kinds', 'kinds', [
    field('f_text', 'title', 'text'),
    field('f_editor', 'body', 'editor'),
    field('f_email', 'contact', 'email', { unique: true }),
    field('f_url', 'site', 'url'),
    field('f_date', 'due', 'date'),
    field('f_auto', 'stamp', 'autodate', { onCreate: true }),
    field('f_num', 'score', 'number'),
    field('f_fixed', 'price', 'number', { mode: 'fixed', scale: 2 }),
    field('f_bool', 'done', 'bool'),
    field('f_sel1', 'status', 'select', { values: ['a', 'b', 'c'], maxSelect: 1 }),
    field('f_seln', 'tags', 'select', { values: ['a', 'b', 'c'], maxSelect: 3 }),
    field('f_file1', 'avatar', 'file', { maxSelect: 1 }),
    field('f_filen', 'docs', 'file', { maxSelect: 5 }),
    field('f_json', 'meta', 'json'),
    field('f_jsonenc', 'secret', 'json', { encrypted: true }),
    field('f_rel1', 'parent', 'relation', { collectionId: 'c_kinds', maxSelect: 1 }),
    field('f_reln', 'peers', 'relation', { collectionId: 'c_kinds', maxSelect: 4 }),
  ], [{ name: 'by_status_due', fields: ['status', 'due'] }, { name: 'title_site', fields: ['title', 'site'], unique: true }]);

  test('every field type gets its column type and stores the codecs\' values', async () => {
    await create(kinds);
    const types = await columnTypes('kinds');
    assert.deepEqual(types, {
      id: 'text', created: 'text', updated: 'text', _rowid: 'bigint',
      title: 'text', body: 'text', contact: 'text', site: 'text', due: 'text', stamp: 'text',
      score: 'double precision', price: 'bigint', done: 'smallint', status: 'text', tags: 'jsonb',
      avatar: 'text', docs: 'jsonb', meta: 'jsonb', secret: 'text', parent: 'text', peers: 'jsonb',
    });
    const identity = await rows(`SELECT is_identity, identity_generation FROM information_schema.columns WHERE table_name = 'kinds' AND column_name = '_rowid'`);
    assert.deepEqual(identity, [{ is_identity: 'YES', identity_generation: 'ALWAYS' }]);
    for (const f of kinds.fields) assert.equal((types as Record<string, string>)[f.name], pgColumnType(f));

    await insert(kinds, 'r1zzzzzzzzzzzzz', {
      title: 'Hello', body: '<p>x</p>', contact: 'Ann@Example.com', site: 'https://example.com', due: '2024-05-06 07:08:09.000Z',
      score: 1.5, price: '12.34', done: true, status: 'b', tags: ['a', 'c'], avatar: 'a_x1.png', docs: ['d_1.pdf'],
      meta: { z: 1, a: [true, null] }, secret: { k: 'v' },
    });
    await insert(kinds, 'r2zzzzzzzzzzzzz', { title: 'Second', parent: 'r1zzzzzzzzzzzzz', peers: ['r1zzzzzzzzzzzzz'] });
    const [r] = await rows(`SELECT *, ${storedTextSql(kinds.fields[13], '"meta"')} AS meta_text, "tags"::text AS tags_text FROM "kinds" WHERE "id" = 'r1zzzzzzzzzzzzz'`);
    assert.equal(r.price, '1234'); // bigint comes back as text from pg
    assert.equal(r.done, 1);
    assert.equal(r.score, 1.5);
    assert.deepEqual(r.tags, ['a', 'c']);
    assert.deepEqual(JSON.parse(String(r.meta_text)), { z: 1, a: [true, null] });
    assert.equal(r.secret, '{"k":"v"}');
    assert.deepEqual(r.peers, []);
    const [r2] = await rows(`SELECT "done", "tags", "_rowid" FROM "kinds" WHERE "id" = 'r2zzzzzzzzzzzzz'`);
    assert.deepEqual([r2.done, r2.tags, Number(r2._rowid) > Number((await rows(`SELECT "_rowid" FROM "kinds" WHERE "id" = 'r1zzzzzzzzzzzzz'`))[0]._rowid)], [0, [], true]);
    const [reg] = await rows(`SELECT "name", "fields" FROM "_collections" WHERE "id" = 'c_kinds'`);
    assert.equal(reg.name, 'kinds');
    assert.deepEqual(JSON.parse(String(reg.fields)), kinds.fields);
  });

  test('unique fields (emails case-insensitively) and unique composite indexes are enforced', async () => {
    assert.equal(await pgCode(insert(kinds, 'r3zzzzzzzzzzzzz', { contact: 'ann@EXAMPLE.com' })), '23505');
    await insert(kinds, 'r3zzzzzzzzzzzzz', { contact: 'bob@example.com', title: 'Hello', site: 'https://other.example' });
    assert.equal(await pgCode(insert(kinds, 'r4zzzzzzzzzzzzz', { title: 'Hello', site: 'https://other.example' })), '23505');
    await insert(kinds, 'r4zzzzzzzzzzzzz', { title: 'Hello', site: 'https://third.example' });
    const idx = (await rows(`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'kinds'`)).map((r) => r.indexname);
    assert.ok(idx.includes(indexSqlName(kinds, 'by_status_due')));
    assert.ok(idx.includes(indexSqlName(kinds, 'title_site')));
  });

  test('relations: missing targets refused, cascade delete and set-null for single and multi-valued relations', async () => {
    const authors = coll('c_auth', 'authors', [field('a_name', 'name', 'text')]);
    await create(authors);
    const books = coll('c_books', 'books', [
      field('b_title', 'title', 'text'),
      field('b_author', 'author', 'relation', { collectionId: 'c_auth', maxSelect: 1, cascadeDelete: true }),
      field('b_editor', 'editor', 'relation', { collectionId: 'c_auth', maxSelect: 1 }),
      field('b_coauth', 'coauthors', 'relation', { collectionId: 'c_auth', maxSelect: 5, cascadeDelete: true }),
      field('b_review', 'reviewers', 'relation', { collectionId: 'c_auth', maxSelect: 5 }),
    ]);
    await create(books);
    for (const id of ['a1zzzzzzzzzzzzz', 'a2zzzzzzzzzzzzz', 'a3zzzzzzzzzzzzz', 'a4zzzzzzzzzzzzz']) await insert(authors, id, { name: id });
    assert.equal(await pgCode(insert(books, 'x1zzzzzzzzzzzzz', { author: 'nobodyzzzzzzzzz' })), '23503');
    assert.equal(await pgCode(insert(books, 'x1zzzzzzzzzzzzz', { coauthors: ['a1zzzzzzzzzzzzz', 'nobodyzzzzzzzzz'] })), '23503');
    assert.equal(await pgCode(insert(books, 'x1zzzzzzzzzzzzz', { reviewers: ['nobodyzzzzzzzzz'] })), '23503');
    await insert(books, 'b1zzzzzzzzzzzzz', { title: 'one', author: 'a1zzzzzzzzzzzzz', editor: 'a2zzzzzzzzzzzzz', reviewers: ['a3zzzzzzzzzzzzz', 'a2zzzzzzzzzzzzz', 'a4zzzzzzzzzzzzz'] });
    await insert(books, 'b2zzzzzzzzzzzzz', { title: 'two', author: 'a3zzzzzzzzzzzzz', editor: 'a2zzzzzzzzzzzzz', coauthors: ['a4zzzzzzzzzzzzz', 'a2zzzzzzzzzzzzz'] });
    await insert(books, 'b3zzzzzzzzzzzzz', { title: 'three', author: 'a3zzzzzzzzzzzzz', coauthors: ['a1zzzzzzzzzzzzz'] });
    // updates are checked too
    assert.equal(await pgCode(db.query(`UPDATE "books" SET "reviewers" = '["a1zzzzzzzzzzzzz","zzzzzzzzzzzzzzz"]' WHERE "id" = 'b1zzzzzzzzzzzzz'`)), '23503');

    await db.query(`DELETE FROM "authors" WHERE "id" = 'a2zzzzzzzzzzzzz'`); // editor → NULL; reviewers lose a2; b2 cascades (coauthor a2)
    assert.deepEqual(await rows(`SELECT "id", "editor", "reviewers", "coauthors" FROM "books" ORDER BY "id"`), [
      { id: 'b1zzzzzzzzzzzzz', editor: null, reviewers: ['a3zzzzzzzzzzzzz', 'a4zzzzzzzzzzzzz'], coauthors: [] },
      { id: 'b3zzzzzzzzzzzzz', editor: null, reviewers: [], coauthors: ['a1zzzzzzzzzzzzz'] },
    ]);
    await db.query(`DELETE FROM "authors" WHERE "id" = 'a1zzzzzzzzzzzzz'`); // b1 (author a1) and b3 (coauthor a1) cascade
    assert.deepEqual(await rows(`SELECT "id" FROM "books"`), []);

    // self relations of `kinds`: multi-valued removal keeps the order of the rest
    await insert(kinds, 'k1zzzzzzzzzzzzz', {});
    await insert(kinds, 'k2zzzzzzzzzzzzz', { parent: 'k1zzzzzzzzzzzzz', peers: ['r3zzzzzzzzzzzzz', 'k1zzzzzzzzzzzzz', 'r4zzzzzzzzzzzzz'] });
    await db.query(`DELETE FROM "kinds" WHERE "id" = 'k1zzzzzzzzzzzzz'`);
    assert.deepEqual(await rows(`SELECT "parent", "peers" FROM "kinds" WHERE "id" = 'k2zzzzzzzzzzzzz'`), [{ parent: null, peers: ['r3zzzzzzzzzzzzz', 'r4zzzzzzzzzzzzz'] }]);
  });

  test('alter: add, rename (swapping names) and drop fields, add and drop indexes, change stored shapes, keeping data', async () => {
    const notes = coll('c_notes', 'notes', [
      field('n_a', 'alpha', 'text'),
      field('n_b', 'beta', 'text'),
      field('n_gone', 'gone', 'number'),
      field('n_sel', 'kind', 'select', { values: ['x', 'y'], maxSelect: 1 }),
      field('n_rel', 'ref', 'relation', { collectionId: 'c_auth', maxSelect: 1 }),
      field('n_num', 'amount', 'number'),
    ], [{ name: 'by_alpha', fields: ['alpha'] }, { name: 'ab', fields: ['alpha', 'beta'], unique: true }]);
    await create(notes);
    await insert(schema.find((c) => c.id === 'c_auth')!, 'a9zzzzzzzzzzzzz', { name: 'nine' });
    await insert(notes, 'n1zzzzzzzzzzzzz', { alpha: 'A1', beta: 'B1', gone: 3, kind: 'x', ref: 'a9zzzzzzzzzzzzz', amount: 12 });
    await insert(notes, 'n2zzzzzzzzzzzzz', { alpha: 'A2', beta: 'B2', kind: 'y', amount: 7.9 });

    const next: Collection = {
      ...notes,
      fields: [
        field('n_a', 'beta', 'text', { unique: true }), // swapped names
        field('n_b', 'alpha', 'text'),
        field('n_sel', 'kind', 'select', { values: ['x', 'y'], maxSelect: 2 }), // one → many
        field('n_rel', 'ref', 'relation', { collectionId: 'c_auth', maxSelect: 3, cascadeDelete: true }), // FK → triggers
        field('n_num', 'amount', 'number', { mode: 'fixed', scale: 2 }), // float → fixed (raw number kept, as SQLite)
        field('n_new', 'added', 'bool'),
      ],
      // `by_alpha` followed its column (now named beta), `ab` dropped, a new composite unique index
      indexes: [{ name: 'by_alpha', fields: ['beta'] }, { name: 'new_ix', fields: ['kind', 'added'] }],
    };
    await update(next);
    assert.deepEqual(await columnTypes('notes'), {
      id: 'text', created: 'text', updated: 'text', _rowid: 'bigint', beta: 'text', alpha: 'text', kind: 'jsonb', ref: 'jsonb', amount: 'bigint', added: 'smallint',
    });
    assert.deepEqual(await rows(`SELECT "id", "beta", "alpha", "kind", "ref", "amount"::text AS amount, "added" FROM "notes" ORDER BY "id"`), [
      { id: 'n1zzzzzzzzzzzzz', beta: 'A1', alpha: 'B1', kind: ['x'], ref: ['a9zzzzzzzzzzzzz'], amount: '12', added: null },
      { id: 'n2zzzzzzzzzzzzz', beta: 'A2', alpha: 'B2', kind: ['y'], ref: [], amount: '7', added: null },
    ]);
    const idx = (await rows(`SELECT indexname FROM pg_indexes WHERE tablename = 'notes'`)).map((r) => String(r.indexname));
    assert.ok(idx.includes(indexSqlName(next, 'by_alpha')) && idx.includes(indexSqlName(next, 'new_ix')));
    assert.ok(!idx.includes(indexSqlName(next, 'ab')));
    // the new unique field is enforced; the dropped composite unique index is not
    assert.equal(await pgCode(db.query(`INSERT INTO "notes" ("id","created","updated","beta") VALUES ('n3zzzzzzzzzzzzz','','','A1')`)), '23505');
    await db.query(`INSERT INTO "notes" ("id","created","updated","beta","alpha") VALUES ('n3zzzzzzzzzzzzz','','','A3','B1')`);
    // the relation is now multi-valued and cascades
    assert.equal(await pgCode(db.query(`UPDATE "notes" SET "ref" = '["zzzzzzzzzzzzzzz"]' WHERE "id" = 'n2zzzzzzzzzzzzz'`)), '23503');
    await db.query(`DELETE FROM "authors" WHERE "id" = 'a9zzzzzzzzzzzzz'`);
    assert.deepEqual((await rows(`SELECT "id" FROM "notes" ORDER BY "id"`)).map((r) => r.id), ['n2zzzzzzzzzzzzz', 'n3zzzzzzzzzzzzz']);

    // and back: many → one keeps the last element, fixed → float keeps the raw integer, index dropped
    const back: Collection = {
      ...next,
      fields: [next.fields[0], next.fields[1], field('n_sel', 'kind', 'select', { values: ['x', 'y'], maxSelect: 1 }),
        field('n_rel', 'ref', 'relation', { collectionId: 'c_auth', maxSelect: 1 }), field('n_num', 'amount', 'number')],
      indexes: [],
    };
    await db.query(`UPDATE "notes" SET "kind" = '["x","y"]' WHERE "id" = 'n2zzzzzzzzzzzzz'`);
    await update(back);
    assert.deepEqual(await rows(`SELECT "id", "kind", "amount" FROM "notes" ORDER BY "id"`), [
      { id: 'n2zzzzzzzzzzzzz', kind: 'y', amount: 7 },
      { id: 'n3zzzzzzzzzzzzz', kind: null, amount: null },
    ]);
    const left = (await rows(`SELECT indexname FROM pg_indexes WHERE tablename = 'notes'`)).map((r) => String(r.indexname));
    assert.ok(!left.includes(indexSqlName(back, 'by_alpha')) && !left.includes(indexSqlName(back, 'new_ix')));
    // single-valued again: a foreign key (NOT VALID for existing rows), SET NULL on delete
    await insert(schema.find((c) => c.id === 'c_auth')!, 'a10zzzzzzzzzzzz', { name: 'ten' });
    assert.equal(await pgCode(db.query(`UPDATE "notes" SET "ref" = 'zzzzzzzzzzzzzzz' WHERE "id" = 'n2zzzzzzzzzzzzz'`)), '23503');
    await db.query(`UPDATE "notes" SET "ref" = 'a10zzzzzzzzzzzz' WHERE "id" = 'n2zzzzzzzzzzzzz'`);
    await db.query(`DELETE FROM "authors" WHERE "id" = 'a10zzzzzzzzzzzz'`);
    assert.deepEqual(await rows(`SELECT "ref" FROM "notes" WHERE "id" = 'n2zzzzzzzzzzzzz'`), [{ ref: null }]);
    const fns = await rows(`SELECT proname FROM pg_proc WHERE proname = $1`, [relationFunctionNames(back, back.fields[3]).del]);
    assert.deepEqual(fns, []);
  });

  test('rename and drop collections; relations follow the rename', async () => {
    const authors = schema.find((c) => c.id === 'c_auth')!;
    const books = schema.find((c) => c.id === 'c_books')!;
    await insert(authors, 'w1zzzzzzzzzzzzz', { name: 'w' });
    await insert(books, 'bk1zzzzzzzzzzzz', { author: 'w1zzzzzzzzzzzzz', reviewers: ['w1zzzzzzzzzzzzz'] });
    await insert(books, 'bk2zzzzzzzzzzzz', { coauthors: ['w1zzzzzzzzzzzzz'] });
    await update({ ...authors, name: 'writers' });
    await update({ ...books, name: 'volumes' });
    const tables = (await rows(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`)).map((r) => r.table_name);
    assert.ok(tables.includes('writers') && tables.includes('volumes') && !tables.includes('authors') && !tables.includes('books'));
    assert.equal(await pgCode(db.query(`INSERT INTO "volumes" ("id","created","updated","coauthors") VALUES ('bk3zzzzzzzzzzzz','','','["nopezzzzzzzzzzz"]')`)), '23503');
    await db.query(`INSERT INTO "writers" ("id","created","updated") VALUES ('w2zzzzzzzzzzzzz','','')`);
    await db.query(`INSERT INTO "volumes" ("id","created","updated","coauthors","reviewers") VALUES ('bk3zzzzzzzzzzzz','','','["w2zzzzzzzzzzzzz"]','["w2zzzzzzzzzzzzz","w1zzzzzzzzzzzzz"]')`);
    await db.query(`DELETE FROM "writers" WHERE "id" = 'w1zzzzzzzzzzzzz'`);
    assert.deepEqual(await rows(`SELECT "id", "reviewers" FROM "volumes" ORDER BY "id"`), [{ id: 'bk3zzzzzzzzzzzz', reviewers: ['w2zzzzzzzzzzzzz'] }]);
    assert.deepEqual((await rows(`SELECT "name" FROM "_collections" WHERE "id" IN ('c_auth', 'c_books') ORDER BY "name"`)).map((r) => r.name), ['volumes', 'writers']);

    await drop(schema.find((c) => c.id === 'c_books')!);
    await drop(schema.find((c) => c.id === 'c_notes')!);
    await drop(schema.find((c) => c.id === 'c_auth')!);
    const left = (await rows(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`)).map((r) => r.table_name);
    assert.ok(!left.includes('volumes') && !left.includes('writers') && !left.includes('notes'));
    assert.deepEqual(await rows(`SELECT "id" FROM "_collections" WHERE "id" IN ('c_auth', 'c_books', 'c_notes')`), []);
    assert.deepEqual(await rows(`SELECT proname FROM pg_proc WHERE proname LIKE '\\_rel%' AND proname NOT LIKE '%c\\_kinds%'`), []);
  });

  test('full-text search through the generated tsvector column, ranked', async () => {
    const docs = coll('c_docs', 'docs', [field('d_title', 'title', 'text', { searchable: true }), field('d_body', 'body', 'editor'), field('d_n', 'n', 'number')]);
    await create(docs);
    await insert(docs, 'd1zzzzzzzzzzzzz', { title: 'apple pie recipe', body: 'banana' });
    await insert(docs, 'd2zzzzzzzzzzzzz', { title: 'apple apple apple' });
    await insert(docs, 'd3zzzzzzzzzzzzz', { title: 'pear', body: 'apple' });
    const search = (text: string) => rows(`SELECT r."id" FROM "docs" r WHERE ${ftsMatchSql('r')} ORDER BY ${ftsRankSql('r')} DESC, r."_rowid"`, [lowerTsquery(text)]);
    assert.deepEqual((await search('apple')).map((r) => r.id), ['d2zzzzzzzzzzzzz', 'd1zzzzzzzzzzzzz']);
    assert.deepEqual((await search('banana')).map((r) => r.id), []);
    const [{ type }] = await rows(`SELECT data_type AS type FROM information_schema.columns WHERE table_name = 'docs' AND column_name = '_fts'`);
    assert.equal(type, 'tsvector');
    assert.ok((await rows(`SELECT indexdef FROM pg_indexes WHERE tablename = 'docs'`)).some((r) => /USING gin \("?_fts"?\)/.test(String(r.indexdef))));

    // the body becomes searchable and the title is renamed: the column is regenerated over the rows
    const next: Collection = { ...docs, fields: [field('d_title', 'heading', 'text', { searchable: true }), field('d_body', 'body', 'editor', { searchable: true }), docs.fields[2]] };
    await update(next);
    assert.deepEqual((await search('banana')).map((r) => r.id), ['d1zzzzzzzzzzzzz']);
    assert.deepEqual((await search('apple')).map((r) => r.id), ['d2zzzzzzzzzzzzz', 'd1zzzzzzzzzzzzz', 'd3zzzzzzzzzzzzz']);
    await db.query(`UPDATE "docs" SET "body" = 'kiwi' WHERE "id" = 'd3zzzzzzzzzzzzz'`);
    assert.deepEqual((await search('kiwi')).map((r) => r.id), ['d3zzzzzzzzzzzzz']);
    // no searchable field left: the column goes; dropping a searchable field works
    await update({ ...next, fields: [next.fields[0], docs.fields[2]].map((f) => ({ ...f, options: {} })) });
    assert.equal((await columnTypes('docs'))._fts, undefined);
  });

  test('without pgvector: a warning, no shadow columns; with it, the SQL', async () => {
    const support = await ensureVectorExtension((sql) => db.query(sql) as Promise<{ rows: Record<string, unknown>[] }>);
    assert.equal(support.available, false);
    assert.ok(support.warning?.startsWith(VECTOR_UNAVAILABLE_WARNING), support.warning);
    assert.match(support.warning!, /vector/);
    const emb = coll('c_emb', 'emb', [field('e_v', 'embedding', 'json', { dimensions: 3, vectorIndex: true })]);
    assert.match(vectorWarning(emb, { vector: false })!, /"embedding".*pgvector/);
    assert.equal(vectorWarning(emb, { vector: true }), null);
    await create(emb);
    assert.deepEqual(Object.keys(await columnTypes('emb')).sort(), ['_rowid', 'created', 'embedding', 'id', 'updated']);
    await insert(emb, 'e1zzzzzzzzzzzzz', { embedding: [1, 2, 3] });

    const sql = createSteps(emb, [], [emb], { vector: true }).map((s) => s.sql);
    assert.ok(sql.some((s) => s.includes('"_vec_e_v" vector(3) GENERATED ALWAYS AS ("_svc_jsonb_vector"("embedding", 3)) STORED')), sql.join('\n'));
    assert.ok(sql.some((s) => /USING hnsw \("_vec_e_v" vector_cosine_ops\)/.test(s)));
    assert.ok(sql.some((s) => /WHERE "embedding" IS NOT NULL AND "_vec_e_v" IS NULL/.test(s)));
    assert.ok(bootstrapSteps({ vector: true }).some((s) => s.sql === VECTOR_FUNCTION_SQL));
    assert.ok(!bootstrapSteps().some((s) => s.sql === VECTOR_FUNCTION_SQL));
    // the dimension changes: the shadow column is replaced; vectorIndex switched off drops the index
    const dims4 = updateSteps(emb, { ...emb, fields: [field('e_v', 'embedding', 'json', { dimensions: 4 })] }, [emb], [], { vector: true }).map((s) => s.sql);
    assert.ok(dims4.some((s) => s.includes('DROP COLUMN IF EXISTS "_vec_e_v"')) && dims4.some((s) => s.includes('vector(4)')));
    assert.ok(!dims4.some((s) => s.includes('hnsw')));
    await drop(emb);
  });

  test('long derived names are shortened deterministically and stay distinct', async () => {
    const id = 'c'.repeat(30);
    const long = coll(id, 'long_names', [field('x'.repeat(30), 'v', 'text', { unique: true }), field('y'.repeat(30), 'w', 'text')],
      [{ name: `i${'n'.repeat(62)}`, fields: ['v', 'w'], unique: true }, { name: `i${'n'.repeat(61)}x`, fields: ['w'] }]);
    await create(long);
    const names = (await rows(`SELECT indexname FROM pg_indexes WHERE tablename = 'long_names'`)).map((r) => String(r.indexname));
    assert.equal(names.length, 6); // pkey, _rowid, created, unique field, two indexes
    assert.ok(names.includes(createdIndexName(long)));
    assert.ok(names.every((n) => Buffer.byteLength(n) <= 63));
    assert.ok(names.includes(indexSqlName(long, long.indexes[0].name)) && names.includes(indexSqlName(long, long.indexes[1].name)));
    assert.equal(pgName('short'), 'short');
    await insert(long, 'l1zzzzzzzzzzzzz', { v: 'a', w: 'b' });
    assert.equal(await pgCode(insert(long, 'l2zzzzzzzzzzzzz', { v: 'a', w: 'c' })), '23505');
    await update({ ...long, indexes: [] });
    assert.equal((await rows(`SELECT indexname FROM pg_indexes WHERE tablename = 'long_names'`)).length, 4);
  });
});
