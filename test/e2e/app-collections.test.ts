/**
 * An app's declared collections (0-conventions.md "Embedding": `collections`): created
 * on the first start (a relation naming its target by name), updated on a later start when the
 * declaration changes (fields matched by name, data kept), and a declaration that would drop a
 * field or change a type refused before the server listens, with the data untouched.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { ROOT, SU_EMAIL, SU_PASSWORD, runCli, startSvc, type Svc } from '../helpers/server.js';

const fixture = (v: number) => join(ROOT, 'test', 'fixtures', `app-collections-v${v}.mjs`);
const dataDir = mkdtempSync(join(tmpdir(), 'svc-declared-'));
let srv: Svc | undefined;

after(async () => {
  await srv?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

test('declared collections are created, then evolved without losing data; a dropping change is refused', async () => {
  srv = await startSvc({ dataDir, args: [`--app=${fixture(1)}`] });
  const notes = await srv.api('GET', '/api/collections/notes', { token: srv.suToken });
  assert.equal(notes.status, 200, notes.text);
  const authors = await srv.api('GET', '/api/collections/authors', { token: srv.suToken });
  assert.equal(authors.body.type, 'auth');
  const rel = notes.body.schema.find((f: any) => f.name === 'author');
  assert.equal(rel.options.collectionId, authors.body.id, 'the relation named its target by name');
  const made = await srv.api('POST', '/api/collections/notes/records', { body: { title: 'kept' } });
  assert.equal(made.status, 201, made.text);
  assert.match(srv.stderr(), /created the declared collection \\"notes\\"/);
  await srv.stop();

  // the same declaration again: nothing to do
  srv = await startSvc({ dataDir, superuser: false, args: [`--app=${fixture(1)}`] });
  assert.doesNotMatch(srv.stderr(), /declared collection/);
  await srv.stop();

  srv = await startSvc({ dataDir, superuser: false, args: [`--app=${fixture(2)}`] });
  assert.match(srv.stderr(), /updated the declared collection \\"notes\\"/);
  const view = await srv.api('GET', `/api/collections/notes/records/${made.body.id}`);
  assert.equal(view.body.title, 'kept', 'the data stayed');
  assert.ok('body' in view.body, 'the new field exists');
  assert.equal((await srv.api('POST', '/api/collections/notes/records', { body: { title: 'x' } })).status, 403, 'the create rule changed to locked');
  const su = await srv.api('POST', '/api/collections/_superusers/auth-with-password', { body: { identity: SU_EMAIL, password: SU_PASSWORD } });
  const again = await srv.api('GET', '/api/collections/notes', { token: su.body.token });
  assert.equal(again.body.id, notes.body.id, 'same collection');
  assert.equal(again.body.schema.find((f: any) => f.name === 'title').id, notes.body.schema.find((f: any) => f.name === 'title').id, 'same field id');
  await srv.stop();
  srv = undefined;

  const refused = runCli(['serve', '--http=127.0.0.1:0', `--data-dir=${dataDir}`, `--app=${fixture(3)}`]);
  assert.equal(refused.status, 1);
  assert.match(refused.stderr, /declared collection \\?"notes\\?".*\\?"title\\?".*does not declare/);
  assert.doesNotMatch(refused.stderr, /serving on/);

  srv = await startSvc({ dataDir, superuser: false, args: [`--app=${fixture(2)}`] });
  assert.equal((await srv.api('GET', `/api/collections/notes/records/${made.body.id}`)).body.title, 'kept', 'nothing was dropped');
});
