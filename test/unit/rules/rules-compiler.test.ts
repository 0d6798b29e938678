import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'libsql';
import { ApiError } from '../../../src/errors/api-error.js';
import { bindAll } from '../../../src/store/bind.js';
import type { Collection, Field, FieldType, FieldOptions } from '../../../src/model/schema.js';
import { bindParams, compileExpression, compileSort } from '../../../src/rules/compiler.js';
import type { CompileOptions, SchemaLookup } from '../../../src/store/rule-types.js';

const f = (name: string, type: FieldType, options: FieldOptions = {}): Field => ({ id: `f_${name}`, name, type, options });
const coll = (id: string, name: string, fields: Field[], type: 'base' | 'auth' = 'base'): Collection => ({
  id, name, type, system: false, fields, indexes: [], options: {},
  listRule: null, viewRule: null, createRule: null, updateRule: null, deleteRule: null, created: '', updated: '',
});

const teams = coll('c_teams', 'teams', [f('name', 'text')]);
const users = coll('c_users', 'users', [
  f('email', 'email'), f('name', 'text'), f('team', 'relation', { collectionId: 'c_teams' }),
  f('phone', 'text', { hidden: true }), f('ssn', 'text', { encrypted: true }),
], 'auth');
const tags = coll('c_tags', 'tags', [f('name', 'text')]);
const posts = coll('c_posts', 'posts', [
  f('title', 'text'), f('views', 'number'), f('price', 'number', { mode: 'fixed', scale: 2 }), f('published', 'bool'),
  f('status', 'select', { values: ['draft', 'live'] }), f('labels', 'select', { values: ['a', 'b', 'c'], maxSelect: 3 }),
  f('author', 'relation', { collectionId: 'c_users' }), f('tags', 'relation', { collectionId: 'c_tags', maxSelect: 9 }),
  f('parent', 'relation', { collectionId: 'c_posts' }), f('meta', 'json'), f('ghost', 'relation', { collectionId: 'nope' }),
  f('note', 'text', { hidden: true }), f('secret', 'json', { encrypted: true }),
]);
const all = [teams, users, tags, posts];
const schema: SchemaLookup = { byId: (id) => all.find((c) => c.id === id), byName: (n) => all.find((c) => c.name === n) };
// superuser filters: the SQL shapes below carry no view rules of relation targets and no email masking
const FILTER: CompileOptions = { mode: 'filter', alias: 'r', superuser: true };
const GUARDED: CompileOptions = { mode: 'filter', alias: 'r' };
const RULE: CompileOptions = { mode: 'rule', alias: 'r' };

const c = (src: string, opts = FILTER) => compileExpression(src, posts, schema, opts);
const values = (src: string) => c(src).params.map((p) => (p.kind === 'value' ? p.value : p));
function assert400(fn: () => unknown, re: RegExp): void {
  assert.throws(fn, (err: unknown) => err instanceof ApiError && err.status === 400 && err.code === 'bad_request' && re.test(err.message));
}

test('scalar operators compile to bound comparisons', () => {
  assert.equal(c('title = "x"').sql, 'r."title" = ?');
  assert.equal(c('title != "x"').sql, 'r."title" IS NOT ?');
  for (const op of ['>', '>=', '<', '<=']) assert.equal(c(`views ${op} 3`).sql, `r."views" ${op} ?`);
  assert.equal(c('title ~ "x"').sql, `r."title" LIKE ? ESCAPE '\\'`);
  assert.equal(c('title !~ "x"').sql, `NOT COALESCE(r."title" LIKE ? ESCAPE '\\', 0)`);
  assert.deepEqual(values('title ~ "ab" && title ~ "a%" && title !~ "a_b\\\\"'), ['%ab%', 'a%', '%a\\_b\\\\%']);
  assert.deepEqual(values('published = true || published = false || views = -2.5'), [1, 0, -2.5]);
  assert.equal(c('title = "a" || views > 1 && published = true').sql, '(r."title" = ? OR (r."views" > ? AND r."published" = ?))');
  assert.equal(c('(title = "a" || views > 1) && published = true').sql, '((r."title" = ? OR r."views" > ?) AND r."published" = ?)');
  assert.equal(c('title = views').sql, 'r."title" = r."views"');
  assert.equal(c('id = "a" && created > "2024" && updated < "2025"').sql, '(r."id" = ? AND r."created" > ? AND r."updated" < ?)');
});

test('null, in lists and the account list', () => {
  assert.equal(c('title = null').sql, 'r."title" IS NULL');
  assert.equal(c('null = title').sql, 'r."title" IS NULL');
  assert.equal(c('title != null').sql, 'r."title" IS NOT NULL');
  assert.equal(c('null = null').sql, '? IS NULL');
  assert.equal(c('title in ("a", "b")').sql, 'r."title" IN (?, ?)');
  assert.deepEqual(values('title in ("a", 1, true)'), ['a', 1, 1]);
  assert.equal(c('title in ()').sql, '0');
  assert.equal(c('title in ("a", null)').sql, '(r."title" IN (?) OR r."title" IS NULL)');
  assert.equal(c('title in (null)').sql, 'r."title" IS NULL');
  // the principal's accounts bind as one JSON array (empty without a tenancy resolver: never holds)
  assert.equal(c('author in @request.account.ids').sql, 'r."author" IN (SELECT value FROM json_each(?))');
  assert.equal(c('@request.auth.id in ("a")').sql, '? IN (?)');
});

test('relation paths, multi-valued fields and json paths', () => {
  // a path starting with a single-valued relation: an uncorrelated semi-join
  assert.equal(c('author.name = "bo"').sql, 'r."author" IN (SELECT r_1."id" FROM "users" r_1 WHERE (r_1."name" = ?))');
  assert.deepEqual(c('author.name = "bo"').drivers.map((d) => d.column), ['r."author"']);
  assert.equal(c('author.team.name != "x"').sql,
    'NOT COALESCE(r."author" IN (SELECT r_1."id" FROM "users" r_1, "teams" r_2 WHERE r_2."id" = r_1."team" AND (r_2."name" IS ?)), 0)');
  assert.deepEqual(c('author.team.name != "x"').drivers, []);
  assert.match(c('tags.name = "t"').sql, /^EXISTS \(SELECT 1 FROM json_each\(CASE WHEN json_valid\(r."tags"\) .* END\) r_2, "tags" r_1 WHERE r_1."id" = r_2.value AND \(r_1."name" = \?\)\)$/);
  assert.match(c('labels = "a"').sql, /^EXISTS \(SELECT 1 FROM json_each\(.*r."labels".*\) r_1 WHERE \(r_1.value = \?\)\)$/);
  assert.match(c('labels = null').sql, /^NOT EXISTS \(.* WHERE \(r_1.value IS NOT NULL\)\)$/);
  assert.match(c('author.name = null').sql, /^NOT COALESCE\(r."author" IN \(SELECT r_1."id" FROM "users" r_1 .*r_1."name" IS NOT NULL/);
  assert.equal(c('meta.a.b_2 > 1').sql, `json_extract(CASE WHEN json_valid(r."meta") THEN r."meta" END, '$.a.b_2') > ?`);
  assert.match(c('author.name = parent.title').sql, /FROM "users" r_1, "posts" r_2 WHERE .*\(r_1."name" = r_2."title"\)/);
  assert.ok(c('parent.parent.parent.parent.parent.parent.title = "x"').sql.includes("r_6"));
  assert400(() => c('parent.parent.parent.parent.parent.parent.parent.title = "x"'), /crosses more than 6 relations/);
  assert400(() => c('title.x = 1'), /^Invalid filter: field "title" has no sub-fields\.$/);
  assert400(() => c('ghost.x = 1'), /cannot resolve the relation "ghost"/);
  assert400(() => c('author.nope = 1'), /^Invalid filter: unknown field "author.nope"\.$/);
  assert400(() => c('nope = 1'), /^Invalid filter: unknown field "nope"\.$/);
});

test('hidden fields: rejected in filters, allowed in rules; encrypted: rejected in both', () => {
  for (const src of ['note = 1', 'author.phone = 1', 'author.passwordHash = 1', 'author.tokenKey = 1', 'author.token_epoch > 1']) {
    assert400(() => c(src), /is hidden and cannot be used here/);
    assert.ok(c(src, RULE).sql.length > 0);
  }
  for (const src of ['secret = 1', 'secret.x = 1', 'author.ssn = "1"']) {
    assert400(() => c(src), /is encrypted/);
    assert400(() => c(src, RULE), /is encrypted/);
  }
  assert400(() => c('passwordHash = 1', RULE), /unknown field "passwordHash"/); // posts is not an auth collection
});

test('a comparison reading @request.account.id or .role holds only with an active account', () => {
  assert.equal(c('@request.account.id = title', RULE).sql, '(? = r."title" AND ? IS NOT ?)');
  assert.equal(c('@request.account.role != "x"', RULE).sql, '(? IS NOT ? AND ? IS NOT ?)');
  assert.equal(c('@request.account.id = null', RULE).sql, '(? IS NULL AND ? IS NOT ?)');
  assert.equal(c('@request.account.role in ("a", null)', RULE).sql, '((? IN (?) OR ? IS NULL) AND ? IS NOT ?)');
  // the list macro needs no guard: it binds an empty array without an account
  assert.equal(c('author in @request.account.ids', RULE).sql, 'r."author" IN (SELECT value FROM json_each(?))');
  const db = new Database(':memory:');
  const holds = (src: string, account?: { id: string; role: string; ids: string[] }) => {
    const e = c(src, RULE);
    const sql = `SELECT ${e.sql.replaceAll('r."title"', "''")}`;
    return Boolean((db.prepare(sql).raw().get(bindAll(bindParams(e, { auth: null, data: null, method: 'GET', account }))) as unknown[])[0]);
  };
  for (const src of ['@request.account.id = ""', '@request.account.id != "acme"', '@request.account.id != null', '@request.account.id = null', '@request.account.role !~ "x"', '@request.account.role in ("", null)', '@request.account.id = title']) {
    assert.equal(holds(src), false, `${src} without an account`);
  }
  const acme = { id: 'acme', role: 'viewer', ids: ['acme'] };
  assert.equal(holds('@request.account.id != null', acme), true);
  assert.equal(holds('@request.account.id != "globex" && @request.account.role !~ "edit"', acme), true);
  assert.equal(holds('@request.account.id = "globex"', acme), false);
});

test('macros bind per request: anonymous, authenticated, like and JSON values', () => {
  const rule = c('author = @request.auth.id && title ~ @request.data.q && @request.method = "GET" && @request.account.id = "" && @request.account.role != "x" && meta = @request.auth.prefs && views = @request.auth.missing', RULE);
  assert.deepEqual(rule.params.slice(0, 2), [{ kind: 'auth', path: 'id', of: 'c_users' }, { kind: 'data', path: 'q', like: true }]);
  // each account comparison is followed by its guard, `@request.account.id != ''` (two slots)
  assert.deepEqual(bindParams(rule, { auth: null, data: null, method: 'GET' }), ['', null, 'GET', 'GET', '', '', '', '', '', 'x', '', '', '', '']);
  const authed = { id: 'u1', collectionId: 'c_users', collectionName: 'users', prefs: { a: [1] } };
  assert.deepEqual(bindParams(rule, { auth: authed, data: { q: '5_%' }, method: 'POST' }), ['u1', '5_%', 'POST', 'GET', '', '', '', '', '', 'x', '', '', '{"a":[1]}', null]);
  const member = { id: 'acme', role: 'editor', ids: ['acme'] };
  assert.deepEqual(bindParams(rule, { auth: authed, data: null, method: 'GET', account: member }).slice(4, 12), ['acme', '', 'acme', '', 'editor', 'x', 'acme', '']);
  assert.deepEqual(bindParams(rule, { auth: authed, data: { q: 'a_b' }, method: 'GET' })[1], '%a\\_b%');
  // one auth identity, one collection: a caller of another collection is no `author`
  const foreign = { id: 'u1', collectionId: 'c_members', collectionName: 'members', prefs: null };
  assert.equal(bindParams(rule, { auth: foreign, data: { q: 'x' }, method: 'GET' })[0], '#');
  const proto = c('@request.data.__proto__ = "x" || @request.data.a.toString = "x" || @request.data.a.b = 1', RULE);
  assert.deepEqual(bindParams(proto, { auth: null, data: { a: { b: true } }, method: 'GET' }), [null, 'x', null, 'x', 1, 1]);
});

test('guarded filters (callers who are not superusers): target view rules and expiry at every hop, private emails masked', () => {
  const viewRuled = coll('c_vr', 'vr', [f('secret', 'text'), f('owner', 'relation', { collectionId: 'c_users' })]);
  viewRuled.viewRule = 'owner = @request.auth.id';
  const open = coll('c_open', 'open', [f('name', 'text'), f('exp', 'date')]);
  open.viewRule = '@public';
  open.options = { ttl_field: 'exp' };
  const root = coll('c_root', 'root', [f('vr', 'relation', { collectionId: 'c_vr' }), f('op', 'relation', { collectionId: 'c_open' }), f('author', 'relation', { collectionId: 'c_users' })]);
  const list = [...all, viewRuled, open, root];
  const sch: SchemaLookup = { byId: (id) => list.find((x) => x.id === id), byName: (n) => list.find((x) => x.name === n) };
  const g = (src: string) => compileExpression(src, root, sch, GUARDED);
  const vr = g("vr.secret = 'x'");
  assert.equal(vr.sql, 'r."vr" IN (SELECT r_1."id" FROM "vr" r_1 WHERE (r_1."owner" = ?) AND (r_1."secret" = ?))');
  assert.deepEqual(bindParams(vr, { auth: { id: 'u1', collectionId: 'c_users' }, data: null, method: 'GET' }), ['u1', 'x']);
  assert.deepEqual(bindParams(vr, { auth: null, data: null, method: 'GET' }), ['', 'x']);
  // a locked target (users has no view rule here) matches nothing; superusers' filters skip rules
  assert.match(g("author.name = 'x'").sql, / WHERE 0 AND /);
  assert.doesNotMatch(compileExpression("author.name = 'x'", root, sch, FILTER).sql, / AND 0 /);
  // the expiry clause joins every hop, superusers included, rules too
  for (const opts of [GUARDED, FILTER, RULE]) {
    const e = compileExpression("op.name = 'x'", root, sch, opts);
    assert.match(e.sql, /\(r_1\."exp" IS NULL OR r_1\."exp" > \?\)/);
    assert.deepEqual(e.params[0], { kind: 'now' });
    assert.match(String(bindParams(e, { auth: null, data: null, method: 'GET' })[0]), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z$/);
  }
  // private emails read as NULL unless visible or the caller's own, on the root and through hops
  const em = compileExpression("email = 'a@b'", users, sch, GUARDED);
  assert.equal(em.sql, '(CASE WHEN r."emailVisibility" <> 0 OR (r."id" = ? AND ? = ?) THEN r."email" END) = ?');
  assert.deepEqual(bindParams(em, { auth: { id: 'u1', collectionId: 'c_users' }, data: null, method: 'GET' }), ['u1', 'c_users', 'c_users', 'a@b']);
  assert.match(compileExpression("email ~ 'a'", users, sch, FILTER).sql, /^r\."email" LIKE/);
  // on the right of ~ the masked value stands three times, with its parameters
  const right = compileExpression('name ~ email', users, sch, GUARDED);
  assert.equal(right.params.length, 9);
  // secrets of the caller are refused in client filters, allowed in rules
  assert400(() => g("@request.auth.passwordHash = 'x'"), /@request\.auth\.passwordHash is hidden/);
  assert400(() => g('@request.auth.tokenKey.x = 1'), /@request\.auth\.tokenKey is hidden/);
  assert.deepEqual(compileExpression("@request.auth.tokenKey = 'x'", root, sch, RULE).authPaths, ['tokenKey']);
  assert.deepEqual(g("@request.auth.nick = 'x' && @request.auth.id != ''").authPaths, ['nick', 'id']);
});

test('fixed-point fields compare against exactly scaled literals and macros', () => {
  assert.deepEqual(values('price >= 1.5 && price < -0.25 && price in (3, 12345678901234567.89)'), [150n, -25n, 300n, 1234567890123456789n]);
  assert.deepEqual(values('price = 1.500'), [150n]);
  assert.deepEqual(values('price = 99999999999999999999'), [9999999999999999999900]);
  assert400(() => c('price = 1.005'), /1\.005 at position 9 is not a decimal with at most 2 decimal places/);
  assert400(() => c('price = "abc"'), /"abc" at position 9 is not a decimal/);
  assert.deepEqual(values('price ~ 1.5'), ['%1.5%']);
  const m = c('price > @request.data.p');
  assert.deepEqual(bindParams(m, { auth: null, data: { p: 2.5 }, method: 'GET' }), [250n]);
  assert.deepEqual(bindParams(m, { auth: null, data: { p: '0.123' }, method: 'GET' }), [null]);
});

test('sort', () => {
  const s = (src: string) => compileSort(src, posts, schema, 'r');
  assert.equal(compileSort('-email,name', users, schema, 'r'), '(CASE WHEN r."emailVisibility" <> 0 THEN r."email" END) DESC, r."name" ASC');
  assert.equal(compileSort('-email', users, schema, 'r', true), 'r."email" DESC');
  assert.equal(s('-created,title, +views ,,@random,-@rowid'), 'r."created" DESC, r."title" ASC, r."views" ASC, RANDOM() ASC, r.rowid DESC');
  assert.equal(s(''), '');
  assert400(() => s(' , '), /^Invalid sort: no field given\.$/); // separators only: malformed
  assert400(() => s('nope'), /^Invalid sort: unknown field "nope"\.$/);
  assert400(() => s('author.name'), /unknown field "author.name"/);
  assert400(() => s('title;DROP TABLE posts'), /unknown field/);
  assert400(() => s('note'), /^Invalid sort: field "note" is hidden/);
  assert400(() => s('-secret'), /^Invalid sort: field "secret" is encrypted/);
  assert400(() => compileSort('passwordHash', users, schema, 'r'), /hidden/);
  assert400(() => s(Array(17).fill('id').join(',')), /at most 16 sort fields/);
  assert.equal(s(Array(16).fill('id').join(',')).split(',').length, 16);
});

test('injection attempts end up as bound parameters or are rejected', () => {
  const db = new Database(':memory:');
  db.exec(`CREATE TABLE "posts" (id TEXT PRIMARY KEY, title TEXT); INSERT INTO posts VALUES ('p1', 'x'' OR 1=1 --'), ('p2', 'plain');`);
  for (const evil of [`x' OR 1=1 --`, `"; DROP TABLE posts; --`, `') OR ('1'='1`, `\\`, `%`, `_`]) {
    const quoted = `'${evil.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
    for (const src of [`title = ${quoted}`, `title ~ ${quoted}`, `title in (${quoted})`]) {
      const e = c(src);
      assert.ok(evil.length < 2 || !e.sql.includes(evil), e.sql);
      const rows = db.prepare(`SELECT id FROM "posts" r WHERE ${e.sql}`).raw().all(bindAll(bindParams(e, { auth: null, data: null, method: 'GET' })));
      const titles: Record<string, string> = { p1: `x' OR 1=1 --`, p2: 'plain' };
      // `~` is a "contains" match, except that a value holding `%` is a LIKE pattern (so '%' matches all).
      const contains = (id: string) => evil === '%' || titles[id].includes(evil);
      const expected = ['p1', 'p2'].filter((id) => (src.includes('~') ? contains(id) : titles[id] === evil));
      assert.deepEqual(rows.map((r) => (r as unknown[])[0]), expected, src);
    }
  }
  assert.equal((db.prepare('SELECT count(*) FROM posts').raw().get([]) as unknown[])[0], 2);
  for (const src of [`title" = 1`, `title = 1; DROP TABLE posts`, `"title" = 1 OR 1`, `title = 1 OR 1 = 1`, `r.title = 1`, `title = x'00'`]) {
    assert.throws(() => c(src), ApiError, src);
  }
  const odd = coll('c_odd', 'we"ird', [f('t', 'text')]);
  assert.equal(compileExpression('p.t = 1', coll('c_x', 'x', [f('p', 'relation', { collectionId: 'c_odd' })]), { byId: () => odd, byName: () => odd }, FILTER).sql,
    'r."p" IN (SELECT r_1."id" FROM "we""ird" r_1 WHERE (r_1."t" = ?))');
  assert.throws(() => c('title = 1', { mode: 'filter', alias: 'r; DROP' }), /invalid alias/);
});

test('dialect: the PostgreSQL emitter on request, SQLite by default; both give the same facts', async () => {
  const { emitSort: pgSort } = await import('../../../src/store/pg/rule-sql.js');
  const { pgEmitExpression: pgEmit } = await import('../../../src/rules/emitters.js');
  const { parseFilter } = await import('../../../src/rules/parser.js');
  const src = "author.name = 'x' && views > 3";
  const lite = c(src);
  const pg = c(src, { ...FILTER, dialect: 'postgres' });
  assert.deepEqual(pg.sql, pgEmit(parseFilter(src), posts, schema, FILTER).sql);
  assert.notEqual(pg.sql, lite.sql);
  assert.deepEqual(pg.params, lite.params);
  assert.deepEqual(pg.drivers.map((d) => d.params), lite.drivers.map((d) => d.params));
  assert.deepEqual(pg.owner, lite.owner);
  assert.equal(compileSort('-views,title', posts, schema, 'r', false, 'postgres'), pgSort('-views,title', posts, schema, 'r', false));
  assert.notEqual(compileSort('-views,title', posts, schema, 'r', false, 'postgres'), compileSort('-views,title', posts, schema, 'r'));
  assert.equal(compileSort('@rowid', posts, schema, 'r', false, 'postgres'), 'r."_rowid" ASC');
  assert.ok(compileSort('@rowid', posts, schema, 'r'));
});
