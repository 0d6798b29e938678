/**
 * `svc typegen` end to end (docs/operations.md, "Types for client code"): the real CLI writes
 * the types of the collections a real server made; the output compiles under `tsc --strict`, a
 * record the server answered (with its expand) type-checks against its `…Response`, and code that
 * breaks the schema (a select value not in the list, a missing required field, a wrong type, a
 * hidden field read) fails to compile, line by line (`@ts-expect-error`).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { ROOT, runCli, startSvc, type Svc } from '../helpers/server.js';
import { createUsers, dumpServerLog, signup } from '../helpers/records-fixtures.js';
import { TEST_BACKEND } from '../helpers/backend.js';

let srv: Svc;
const work = mkdtempSync(join(tmpdir(), 'svc-typegen-'));

before(async () => {
  srv = await startSvc();
  const users = await createUsers(srv, 'users');
  await srv.createCollection({
    name: 'blog_posts', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@public',
    fields: [
      { name: 'title', type: 'text', options: { required: true } },
      { name: 'status', type: 'select', options: { values: ['draft', 'published'] } },
      { name: 'tags', type: 'select', options: { values: ['news', 'tech', 'life'], maxSelect: 3 } },
      { name: 'author', type: 'relation', options: { collectionId: users.id } },
      { name: 'readers', type: 'relation', options: { collectionId: users.id, maxSelect: 10 } },
      { name: 'price', type: 'number', options: { mode: 'fixed', scale: 2 } },
      { name: 'views', type: 'number' },
      { name: 'meta', type: 'json' },
      { name: 'cover', type: 'file' },
      { name: 'secret', type: 'text', options: { hidden: true } },
      { name: 'published', type: 'bool' },
    ],
  });
});
after(async () => {
  dumpServerLog(srv);
  await srv?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** `tsc --strict --noEmit` over `files` in the work folder: exit status and output. */
function tsc(files: string[]): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '--strict', '--noEmit', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--skipLibCheck', ...files.map((f) => join(work, f))], { encoding: 'utf8', cwd: work });
  return { status: r.status, out: r.stdout + r.stderr };
}

test('typegen writes types that compile strictly, fit what the server answers and refuse what the schema refuses', async () => {
  const out = join(work, 'svc-types.ts');
  const r = runCli(['typegen', `--out=${out}`, `--data-dir=${srv.dataDir}`]);
  assert.equal(r.status, 0, r.stderr);
  const types = readFileSync(out, 'utf8');
  assert.match(types, /export type BlogPostsStatusOptions = "draft" \| "published";/);
  assert.match(types, /export interface BlogPostsRecord extends BaseRecord \{/);
  assert.doesNotMatch(types.slice(types.indexOf('interface BlogPostsRecord'), types.indexOf('interface BlogPostsCreate')), /secret/, 'a hidden field is not in the answer type');
  assert.match(types, /blog_posts: BlogPostsRecord;/);
  assert.equal(tsc(['svc-types.ts']).status, 0, tsc(['svc-types.ts']).out);

  // a record the server answered, with its expand, is a BlogPostsResponse
  const alice = await signup(srv, 'users', 'alice@example.com');
  const made = await srv.api('POST', '/api/collections/blog_posts/records', {
    body: { title: 'Hello', status: 'published', tags: ['news', 'tech'], author: alice.id, readers: [alice.id], price: '12.50', views: 3, meta: { a: [1] }, published: true },
  });
  assert.equal(made.status, 201, made.text);
  const got = await srv.api('GET', `/api/collections/blog_posts/records/${made.body.id}?expand=author,readers`);
  assert.equal(got.status, 200, got.text);
  const list = await srv.api('GET', '/api/collections/users/records');
  writeFileSync(join(work, 'answers.ts'), [
    "import type { BlogPostsResponse, UsersRecord, CollectionResponses } from './svc-types.js';",
    `export const post: BlogPostsResponse = ${JSON.stringify(got.body)};`,
    `export const users: UsersRecord[] = ${JSON.stringify(list.body.items)};`,
    "export const again: CollectionResponses['blog_posts'] = post;",
    '',
  ].join('\n'));
  const answers = tsc(['svc-types.ts', 'answers.ts']);
  assert.equal(answers.status, 0, answers.out);

  // what the schema refuses does not compile: each line below must be an error
  writeFileSync(join(work, 'misuse.ts'), [
    "import type { BlogPostsCreate, BlogPostsRecord, BlogPostsUpdate, UsersCreate } from './svc-types.js';",
    "export const ok: BlogPostsCreate = { title: 'x', status: 'draft', tags: ['life'], readers: [], price: 1 };",
    "export const okUpdate: BlogPostsUpdate = { views: null };",
    "export const okUser: UsersCreate = { email: 'a@b.co', password: 'p', passwordConfirm: 'p' };",
    '// @ts-expect-error: not one of the select values',
    "export const badStatus: BlogPostsCreate = { title: 'x', status: 'archived' };",
    '// @ts-expect-error: the required title is missing',
    "export const noTitle: BlogPostsCreate = { status: 'draft' };",
    '// @ts-expect-error: views is a number',
    "export const badViews: BlogPostsUpdate = { views: 'many' };",
    '// @ts-expect-error: a multiple relation is a list of ids',
    "export const badReaders: BlogPostsUpdate = { readers: 'abc' };",
    'export function read(r: BlogPostsRecord): unknown {',
    '  // @ts-expect-error: a hidden field is never answered',
    '  return r.secret;',
    '}',
    '',
  ].join('\n'));
  const misuse = tsc(['svc-types.ts', 'misuse.ts']);
  assert.equal(misuse.status, 0, misuse.out);
});

test('typegen: stdout without --out, --json, and (SQLite) a data directory with no database is an error', () => {
  const r = runCli(['typegen', `--data-dir=${srv.dataDir}`]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /export interface UsersRecord extends BaseRecord/);
  const j = runCli(['typegen', '--json', `--data-dir=${srv.dataDir}`]);
  assert.equal(j.status, 0, j.stderr);
  const parsed = JSON.parse(j.stdout);
  assert.equal(parsed.collections, 2);
  assert.equal(parsed.types, r.stdout);
  // on PostgreSQL the database is the URL's, never missing
  if (TEST_BACKEND === 'postgres') return;
  const empty = mkdtempSync(join(tmpdir(), 'svc-typegen-empty-'));
  try {
    const e = runCli(['typegen', `--data-dir=${empty}`]);
    assert.equal(e.status, 1);
    assert.match(e.stderr, /no database/);
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
});
