/**
 * The example app (examples/tasks/app.js) served by `svc serve --app=`, used the way its README
 * says: the hook normalizes tasks, the close route works for the owner only, the summary is for
 * superusers, and the minutely job marks past-due tasks overdue.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, startSvc, type Svc } from '../helpers/server.js';
import { sleep } from '../helpers/auth-helpers.js';

let srv: Svc;
const PW = 'tasks-pass-1';

async function user(email: string): Promise<string> {
  await srv.api('POST', '/api/collections/users/records', { body: { email, password: PW, passwordConfirm: PW } });
  return (await srv.api('POST', '/api/collections/users/auth-with-password', { body: { identity: email, password: PW } })).body.token;
}

before(async () => {
  srv = await startSvc({ args: [`--app=${join(ROOT, 'examples', 'tasks', 'app.js')}`] });
});

after(async () => {
  await srv?.stop();
  if (srv) rmSync(srv.dataDir, { recursive: true, force: true });
});

test('the tasks example: hook, owner-only close route, superuser summary, overdue job', { timeout: 90_000 }, async () => {
  const ann = await user('ann@example.com');
  const bob = await user('bob@example.com');
  const made = await srv.api('POST', '/api/collections/tasks/records', { token: ann, body: { title: '  Write the report  ', status: 'done' } });
  assert.equal(made.status, 201, made.text);
  assert.equal(made.body.title, 'Write the report');
  assert.equal(made.body.status, 'open', 'the hook opens every new task');
  const empty = await srv.api('POST', '/api/collections/tasks/records', { token: ann, body: { title: '   ' } });
  assert.equal(empty.status, 400);
  assert.ok(empty.body.data.title);

  assert.equal((await srv.api('POST', `/api/tasks/${made.body.id}/close`, { token: bob })).status, 404, "bob cannot close ann's task");
  const closed = await srv.api('POST', `/api/tasks/${made.body.id}/close`, { token: ann });
  assert.equal(closed.status, 200, closed.text);
  assert.deepEqual(closed.body, { id: made.body.id, status: 'done' });

  const late = await srv.api('POST', '/api/collections/tasks/records', { token: ann, body: { title: 'Late one', due: '2020-01-01 00:00:00.000Z' } });
  assert.equal((await srv.api('GET', '/api/tasks/summary', { token: ann })).status, 403);
  const deadline = Date.now() + 75_000;
  for (;;) {
    const s = await srv.api('GET', '/api/tasks/summary', { token: srv.suToken });
    assert.equal(s.status, 200);
    if (s.body.overdue === 1) {
      assert.deepEqual(s.body, { open: 0, overdue: 1, done: 1 });
      break;
    }
    if (Date.now() > deadline) assert.fail(`the job did not mark the task overdue: ${s.text}`);
    await sleep(500);
  }
  const view = await srv.api('GET', `/api/collections/tasks/records/${late.body.id}`, { token: ann });
  assert.equal(view.body.status, 'overdue');
});
