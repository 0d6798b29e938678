/**
 * Crash safety: the server is killed with SIGKILL during a stream of concurrent creates
 * and updates, at several points, and restarted on the same data directory each time. Every
 * write answered 2xx must be there with what was acknowledged (an update's version at least the
 * last one acknowledged, never older), and nothing half-written: each record's checksum matches
 * its fields, a create with a relation never points at a missing record, and SQLite's integrity
 * check passes. WAL with synchronous=FULL and group commit answered after COMMIT make it hold.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSvc, SU_EMAIL, SU_PASSWORD, type Svc } from '../helpers/server.js';
import { withDb } from '../helpers/auth-helpers.js';
import { TEST_BACKEND } from '../helpers/backend.js';
import { sleep, waitFor } from '../helpers/wait.js';

const sum = (title: string, version: number, parent: string) => createHash('sha256').update(`${title}|${version}|${parent}`).digest('hex').slice(0, 16);

interface Acked {
  /** version acknowledged last, per record id */
  versions: Map<string, number>;
  titles: Map<string, string>;
  parents: Map<string, string>;
}

async function login(srv: Svc): Promise<string> {
  const r = await fetch(`${srv.url}/api/collections/_superusers/auth-with-password`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identity: SU_EMAIL, password: SU_PASSWORD }),
  });
  const body = (await r.json()) as { token: string };
  assert.equal(r.status, 200, JSON.stringify(body));
  return body.token;
}

/**
 * Runs `clients` loops of creates (some pointing at an earlier record) and updates (version + 1,
 * checksum over the fields) until the server dies; records only what was answered 2xx.
 */
function drive(srv: Svc, token: string, acked: Acked, clients: number): { stop: () => void; done: Promise<number>; answered: () => number } {
  let stopped = false;
  let answered = 0;
  // one update per record at a time: two concurrent updates of one record may commit in either
  // order, so the later acknowledgement would not say which version must survive
  const updating = new Set<string>();
  const post = (path: string, method: string, body: unknown) =>
    fetch(srv.url + path, { method, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify(body), signal: AbortSignal.timeout(5000) });
  const loop = async (c: number): Promise<void> => {
    let i = 0;
    while (!stopped) {
      i++;
      const known = [...acked.versions.keys()];
      try {
        if (known.length < 20 || i % 3 === 0) {
          const parent = known.length && i % 2 ? known[(i * 7 + c) % known.length] : '';
          const title = `c${c}-${i}-${Math.random().toString(36).slice(2, 8)}`;
          const r = await post('/api/collections/items/records', 'POST', { title, version: 1, parent, check: sum(title, 1, parent) });
          if (r.status === 201) {
            const rec = (await r.json()) as { id: string };
            acked.versions.set(rec.id, 1);
            acked.titles.set(rec.id, title);
            acked.parents.set(rec.id, parent);
            answered++;
          } else await r.arrayBuffer();
        } else {
          const id = known[(i * 13 + c) % known.length];
          if (updating.has(id)) continue;
          updating.add(id);
          const v = (acked.versions.get(id) ?? 1) + 1;
          const title = acked.titles.get(id)!;
          const parent = acked.parents.get(id)!;
          try {
            const r = await post(`/api/collections/items/records/${id}`, 'PATCH', { version: v, check: sum(title, v, parent) });
            if (r.status === 200) {
              if (v > (acked.versions.get(id) ?? 0)) acked.versions.set(id, v);
              answered++;
            } else await r.arrayBuffer();
          } finally {
            updating.delete(id);
          }
        }
      } catch {
        return; // the server is gone
      }
    }
  };
  const done = Promise.all(Array.from({ length: clients }, (_, c) => loop(c))).then(() => answered);
  return { stop: () => (stopped = true), done, answered: () => answered };
}

test('kill -9 during creates and updates loses no acknowledged write and leaves nothing half-written', { timeout: 120_000 }, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-crash-'));
  const acked: Acked = { versions: new Map(), titles: new Map(), parents: new Map() };
  let srv: Svc | undefined;
  try {
    srv = await startSvc({ dataDir });
    // one sign-in per server start: the sign-in rate limit (10 a minute) outlives a restart where
    // its counters live in the database (PostgreSQL)
    let token = await login(srv);
    const made = await fetch(`${srv.url}/api/collections`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ name: 'items', fields: [{ name: 'title', type: 'text' }, { name: 'version', type: 'number' }, { name: 'parent', type: 'text' }, { name: 'check', type: 'text' }] }),
    });
    assert.equal(made.status, 201, await made.text());
    // kill points: early in a burst, mid-stream, late, right after a burst of acknowledgements, and at once
    const killAfterMs = [150, 600, 1200, 400, 40];
    let totalAnswered = 0;
    for (const [round, ms] of killAfterMs.entries()) {
      const load = drive(srv, token, acked, 12);
      await sleep(ms);
      if (round === 2) {
        // the late kill also waits for the load to have made progress (a count, not a time: a
        // loaded machine may answer far fewer writes than usual in the same time)
        await waitFor(() => totalAnswered + load.answered() > 100, 30_000);
      }
      if (round === 3) {
        // a burst of acknowledgements lands, then the kill
        load.stop();
        await Promise.race([load.done, sleep(2000)]);
      }
      srv.proc.kill('SIGKILL');
      load.stop();
      totalAnswered += await load.done;
      await new Promise((r) => (srv.proc.exitCode !== null || srv.proc.signalCode !== null ? r(null) : srv.proc.once('exit', r)));
      srv = await startSvc({ dataDir, superuser: false });
      // every acknowledged write is there, at least at its acknowledged version, and consistent
      token = await login(srv);
      const token2 = token;
      const rows = new Map<string, { title: string; version: number; parent: string; check: string }>();
      for (let page = 1; ; page++) {
        const r = await fetch(`${srv.url}/api/collections/items/records?perPage=500&page=${page}&skipTotal=true`, { headers: { authorization: `Bearer ${token2}` } });
        const body = (await r.json()) as { items: Array<{ id: string; title: string; version: number; parent: string; check: string }> };
        for (const it of body.items) rows.set(it.id, it);
        if (body.items.length < 500) break;
      }
      for (const [id, v] of acked.versions) {
        const row = rows.get(id);
        assert.ok(row, `round ${round}: acknowledged record ${id} is missing`);
        assert.ok(row.version >= v, `round ${round}: ${id} is at version ${row.version}, ${v} was acknowledged`);
      }
      for (const [id, row] of rows) {
        assert.equal(row.check, sum(row.title, row.version, row.parent ?? ''), `round ${round}: ${id} is half-written`);
        if (row.parent) assert.ok(rows.has(row.parent), `round ${round}: ${id} points at a missing record`);
        // an unacknowledged write may have committed: learn it, so later rounds check it too
        if (!acked.versions.has(id) || acked.versions.get(id)! < row.version) {
          acked.versions.set(id, row.version);
          acked.titles.set(id, row.title);
          acked.parents.set(id, row.parent ?? '');
        }
      }
    }
    await srv.stop();
    const noPragma = TEST_BACKEND === 'postgres' ? 'PRAGMA integrity_check checks the SQLite database file (PostgreSQL has no such pragma)' : false;
    await t.test('the database file passes PRAGMA integrity_check', { skip: noPragma }, () => {
      const check = withDb(dataDir, (db) => (db.prepare('PRAGMA integrity_check').raw(true).all() as unknown[][]).map((r) => r[0]));
      assert.deepEqual(check, ['ok']);
    });
    assert.ok(totalAnswered > 100, `the load made progress between kills (${totalAnswered} acknowledged writes)`);
  } finally {
    // a failed check must not leave the server running (its pipes would keep the runner waiting)
    if (srv && srv.proc.exitCode === null && srv.proc.signalCode === null) srv.proc.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});
