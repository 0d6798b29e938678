import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startSvc, type Svc } from '../helpers/server.js';
import { TEST_BACKEND } from '../helpers/backend.js';

let srv: Svc;
before(async () => { srv = await startSvc(); });
after(async () => { await srv?.stop(); });

test('health and meta answer without credentials', async () => {
  const h = await srv.api('GET', '/api/health');
  assert.equal(h.status, 200);
  assert.equal(h.body.status, 'ok');
  const m = await srv.api('GET', '/api/meta');
  assert.equal(m.status, 200);
  assert.deepEqual(Object.keys(m.body).slice(0, 5), ['svc', 'commit', 'api', 'capabilities', 'endpoints']);
  assert.ok(!m.text.includes(srv.dataDir), 'meta never contains paths');
  // the backend: libsql by default, the server-SQL backend with SERVICE_DATABASE_URL (npm run test:pg)
  const pg = TEST_BACKEND === 'postgres';
  assert.equal(h.body.backend, pg ? 'postgres' : 'libsql');
  assert.equal(m.body.capabilities.serverSql, pg);
  assert.ok(!/postgres(ql)?:\/\//.test(m.text + h.text), 'no connection string in meta or health');
});
