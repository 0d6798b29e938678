/**
 * The example app (examples/tasks/app.js) served by `svc serve --app=`, used the way its README
 * says: the hook normalizes tasks, the close route works for the owner only, the summary is for
 * superusers, the minutely job marks past-due tasks overdue and, with the `overdue-mail` flag
 * on, queues a mail to the owner; the example's migration runs at the first start.
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

  const flag = await srv.api('PUT', '/api/settings/flag:overdue-mail', { token: srv.suToken, body: { value: 'true' } });
  assert.equal(flag.status, 200, flag.text);
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
  // the flag is on: the owner's mail went through the queue to the log transport (no SMTP here)
  const mailed = () => /"scope":"mail","msg":"to=ann@example\.com subject=\\"Overdue: Late one\\" text=\\"Hi ann@example\.com, .*html=\\"<p>Hi ann@example\.com, <b>Late one<\/b>/.test(srv.stderr());
  for (let i = 0; i < 100 && !mailed(); i++) await sleep(100);
  assert.ok(mailed(), 'the overdue mail was queued and delivered (log transport)');
  assert.match(srv.stderr(), /applied migration 0001_open_untitled_status/, 'the example migration ran at the first start');
});
